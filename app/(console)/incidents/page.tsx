import { redirect } from "next/navigation";

/** Incidents are listed with the other overrides. */
export default function IncidentsIndex() {
  redirect("/overrides");
}
