"use client";

import { useEffect, useState } from "react";

/**
 * False on the server and during hydration, true after mount. Charts draw only once mounted: they
 * need the container's size and the viewer's time zone, neither of which the server knows, so
 * drawing on the server would only produce markup that hydration then disagrees with.
 */
export function useIsMounted(): boolean {
  const [isMounted, setIsMounted] = useState(false);
  useEffect(() => setIsMounted(true), []);
  return isMounted;
}
