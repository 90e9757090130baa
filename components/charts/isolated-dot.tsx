"use client";

import type { DotItemDotProps } from "recharts";
import { isolatedPointIndexes } from "@/lib/console/chart-series";

/**
 * A `dot` renderer for a line with gaps: a dot only where a value has no neighbour, since a line
 * cannot be drawn through a lone point and it would otherwise not show at all. Every other point
 * is part of a visible segment and needs no dot, which keeps a 96-point line readable on a phone.
 */
export function isolatedDot(values: readonly (number | null)[], color: string) {
  const isolated = isolatedPointIndexes(values);
  // A render function recharts calls with each point's props, not a component.
  return ({ cx, cy, index }: DotItemDotProps) => {
    if (!isolated.has(index) || cx === undefined || cy === undefined) {
      return <g key={`dot-${index}`} />;
    }
    return <circle key={`dot-${index}`} cx={cx} cy={cy} r={3} fill={color} stroke={color} />;
  };
}
