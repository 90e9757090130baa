/** What an area that does not exist yet says, plainly, instead of showing invented data. */
export function NotBuilt({ area, purpose }: { area: string; purpose: string }) {
  return (
    <>
      <header className="page-header">
        <h1>{area}</h1>
        <p>{purpose}</p>
      </header>
      <div className="notice" role="status">
        <strong>Not built yet.</strong> This area is planned but has no working features in this
        version, so it shows nothing rather than sample data. The <a href="/status">status page</a>{" "}
        works.
      </div>
    </>
  );
}
