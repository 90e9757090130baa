import { describeRacesAcrossProcesses } from "./redis-race-suite";

describeRacesAcrossProcesses("on one Redis");
