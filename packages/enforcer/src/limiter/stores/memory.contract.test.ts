import { runLimiterStoreContract } from "../../testing/limiter-store-contract";
import { ReferenceStore } from "../../testing/reference-store";
import { MemoryStore } from "./memory";

runLimiterStoreContract("reference store", async (clock) => new ReferenceStore(clock));

runLimiterStoreContract("MemoryStore", async (clock) => new MemoryStore({ clock }));

// Small enough that earlier tests' keys are evicted as the suite runs. A test's own keys are the
// most recently used, so eviction must not change any of its decisions.
runLimiterStoreContract(
  "MemoryStore bounded at 64 keys",
  async (clock) => new MemoryStore({ clock, maxKeys: 64 }),
);
