export const INSTALL_STAMP_PATH: string;
export function installManifests(root: string): string[];
export function installFingerprint(root: string, moduleAbi?: string): string;
export function installReason(state: { fingerprint: string; stamp: string | null }): string | null;
export function readInstallStamp(root: string): string | null;
export function writeInstallStamp(root: string): void;
