// The web servers create and migrate the run's database themselves (`migrate deploy` creates it);
// nothing else is needed before the first spec.
export default async function globalSetup(): Promise<void> {}
