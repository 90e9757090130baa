/**
 * Publication of compiled policy snapshots through Redis: the key names, the atomic
 * newer-only publish (control plane), and the validated read and announcement parsing
 * (enforcers). See lib/control/README.md for the guarantees.
 */
export { type PolicyRedisNames, policyRedisNames } from "./keys";
export {
  PUBLISH_SNAPSHOT_SCRIPT,
  PUBLISH_SNAPSHOT_SHA,
  type PublishingRedis,
  type PublishResult,
  publishSnapshot,
  type SnapshotToPublish,
} from "./publish-snapshot";
export {
  type Announcement,
  type CurrentSnapshotRead,
  parseAnnouncement,
  type ReadingRedis,
  readCurrentSnapshot,
} from "./read-current-snapshot";
