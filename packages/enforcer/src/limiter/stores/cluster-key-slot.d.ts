/** Types for `cluster-key-slot` (the hash-slot function ioredis routes Cluster commands with). */
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0 to 16383) of `key`, honouring a `{hash tag}`. */
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
