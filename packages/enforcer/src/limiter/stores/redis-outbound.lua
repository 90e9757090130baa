-- The Lua behind `RedisOutboundStore` (redis-outbound.ts): turns and concurrency slots for callers
-- that wait for an outbound budget. Loaded in the same library as `redis-decide.lua`, after it, so
-- a turn is decided by that file's `decide` (every algorithm, exactly as the pure core decides)
-- and never by a second copy of the algorithms.
--
-- TURNS. A caller asks once: `turn(KEYS, ARGV)` finds the earliest instant at or after the
-- previous turn given on this key at which the limit admits the caller's cost ("p" peeks with
-- `decide`: a rejection's retry-after says when to ask again), checks it against the caller's
-- longest wait, and, if it is within, decides at that instant ("d"), which writes the limit's
-- state as of then, and stores the instant as the key's last turn. The caller sleeps until its
-- turn and goes without asking again. Turns are therefore given in the order calls reach Redis,
-- and the limit's state is exactly what it would be had every caller called at its turn: no
-- window of the limit ever admits more than the algorithm allows.
--
-- A turn given back (the caller aborted while waiting) is kept in a sorted set of free turns
-- (score = instant, member = "<cost>:<id>"), and the next caller whose cost fits and whose wait
-- would reach it takes it instead of a new one: nothing is charged for an abandoned wait, and no
-- caller already waiting is moved. Free turns in the past are dropped.
--
--   KEYS   [1] the subject's hash (as for `decide`), [2] the key's last turn (a hash, field
--          "t"), [3] its free turns, [4] the sliding log's key when the limit is a sliding log
--   ARGV   [1] the check ("<algorithm code> <p1> <p2> e <bucket>", as for `decide`), [2] cost,
--          [3] the longest wait in ms, [4] the expiry margin in ms
--   Reply  { status, waitMs, turnMs, nowMs } as %.17g texts, status "turn" (go at turnMs),
--          "late" (the earliest turn is past the longest wait; nothing written) or "cost" (the
--          cost exceeds what the limit can ever admit)
--
-- SLOTS. Concurrency slots are members of a sorted set whose score is the instant the slot
-- expires: the holder renews it while it works, so a holder that dies frees its slots at most
-- one TTL after its last renewal. Every slot operation first drops the expired members and
-- counts them, so each slot freed by its TTL is counted exactly once, by the call that reaps it:
-- into the hash KEYS[2] (field "expired", the total) and in the reply (`expired`, what this call
-- reaped), which the caller adds to its per-minute figures ("freed by TTL" on the console).
--
--   KEYS   [1] the holders, [2] a hash counting slots freed by expiry (field "expired")
--   ARGV   "a" <max> <ttlMs> <holder>: take a slot; reply {1, held, expired} or {0, held,
--          "<ms until the earliest expiry>", expired}
--          "r" <ttlMs> <holder>: renew; {1, expired}, or {0, expired} when the slot had expired
--          (reaped now or before) or was freed
--          "f" <holder>: free; {1, expired}, or {0, expired} when it was already free or had
--          expired (never frees another's slot)

local function outbound_now()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
end

local function g17(x)
  return string.format("%.17g", x)
end

local function turn(KEYS, ARGV)
  local check, cost_text = ARGV[1], ARGV[2]
  local cost, max_wait, margin = tonumber(cost_text), tonumber(ARGV[3]), tonumber(ARGV[4])
  if not (cost and cost >= 1 and cost <= 1e9 and max_wait and max_wait >= 0
    and max_wait <= 3600000 and margin and margin >= 0 and margin <= 3600000) then
    return redis.error_reply("invalid turn arguments")
  end
  local at_now = outbound_now()

  -- A free turn first: the earliest one still ahead that the cost fits and the wait reaches.
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", "(" .. g17(at_now))
  local free = redis.call("ZRANGEBYSCORE", KEYS[3], g17(at_now), g17(at_now + max_wait),
    "WITHSCORES")
  for i = 1, #free, 2 do
    local freed_cost = tonumber(string.match(free[i], "^(%d+):"))
    if freed_cost and freed_cost >= cost then
      redis.call("ZREM", KEYS[3], free[i])
      local at = tonumber(free[i + 1])
      return { "turn", g17(at - at_now), g17(at), g17(at_now) }
    end
  end

  local last = tonumber(redis.call("HGET", KEYS[2], "t") or "")
  local at = at_now
  if last and last > at then at = last end
  local keys = { KEYS[1] }
  if KEYS[4] then keys[2] = KEYS[4] end
  local margin_text = g17(math.ceil(margin + (at - at_now)))
  local is_allowed = false
  -- A rejection's retry-after is exact for every algorithm; a few more rounds cover rounding.
  for _ = 1, 8 do
    local reply = decide(keys, { margin_text, "p " .. g17(at) .. " " .. cost_text .. " 1", check })
    if type(reply) ~= "string" then return reply end
    local code, _, retry_ms = struct.unpack("<Bddd", reply)
    if code == 2 then return { "cost", "0", g17(at), g17(at_now) } end
    if code == 0 then
      is_allowed = true
      break
    end
    at = at + math.max(retry_ms, 0.001)
    if at - at_now > max_wait then return { "late", g17(at - at_now), g17(at), g17(at_now) } end
  end
  if not is_allowed then return redis.error_reply("no turn found for " .. check) end
  if at - at_now > max_wait then return { "late", g17(at - at_now), g17(at), g17(at_now) } end

  margin_text = g17(math.ceil(margin + (at - at_now)))
  local reply = decide(keys, { margin_text, "d " .. g17(at) .. " " .. cost_text .. " 1", check })
  if type(reply) ~= "string" then return reply end
  if struct.unpack("<B", reply) ~= 0 then
    return redis.error_reply("the turn at " .. g17(at) .. " was not admitted")
  end
  redis.call("HSET", KEYS[2], "t", g17(at))
  redis.call("PEXPIRE", KEYS[2], math.ceil(at - at_now + margin))
  return { "turn", g17(at - at_now), g17(at), g17(at_now) }
end

-- KEYS [1] the key's free turns. ARGV [1] the turn's instant, [2] its cost, [3] a unique id,
-- [4] the expiry margin. Reply 1 when kept, 0 when the turn is already due (then it was spent).
local function give_back(KEYS, ARGV)
  local at, cost, margin = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
  if not (at and cost and cost >= 1 and margin and ARGV[3]) then
    return redis.error_reply("invalid give-back arguments")
  end
  local at_now = outbound_now()
  if at <= at_now then return 0 end
  redis.call("ZADD", KEYS[1], g17(at), string.format("%d:%s", cost, ARGV[3]))
  local ttl = math.ceil(at - at_now + margin)
  if redis.call("PTTL", KEYS[1]) < ttl then redis.call("PEXPIRE", KEYS[1], ttl) end
  return 1
end

-- Drops the expired slots and counts them: the only place a slot is freed by its TTL.
local function reap_slots(KEYS, at_now)
  local expired = redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", g17(at_now))
  if expired > 0 then
    redis.call("HINCRBY", KEYS[2], "expired", expired)
    redis.call("PEXPIRE", KEYS[2], 604800000)
  end
  return expired
end

local function slots(KEYS, ARGV)
  local op = ARGV[1]
  local at_now = outbound_now()
  if op == "a" then
    local max, ttl, holder = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
    if not (max and max >= 1 and ttl and ttl >= 1 and holder) then
      return redis.error_reply("invalid slot arguments")
    end
    local expired = reap_slots(KEYS, at_now)
    local held = redis.call("ZCARD", KEYS[1])
    if held < max then
      redis.call("ZADD", KEYS[1], g17(at_now + ttl), holder)
      if redis.call("PTTL", KEYS[1]) < ttl + 1000 then redis.call("PEXPIRE", KEYS[1], ttl + 1000) end
      return { 1, held + 1, expired }
    end
    local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
    return { 0, held, g17(tonumber(first[2]) - at_now), expired }
  elseif op == "r" then
    local ttl, holder = tonumber(ARGV[2]), ARGV[3]
    if not (ttl and ttl >= 1 and holder) then return redis.error_reply("invalid slot arguments") end
    -- An expired slot is reaped here: it is already free for others, and a late renewal must not
    -- take it back.
    local expired = reap_slots(KEYS, at_now)
    if not redis.call("ZSCORE", KEYS[1], holder) then return { 0, expired } end
    redis.call("ZADD", KEYS[1], g17(at_now + ttl), holder)
    if redis.call("PTTL", KEYS[1]) < ttl + 1000 then redis.call("PEXPIRE", KEYS[1], ttl + 1000) end
    return { 1, expired }
  elseif op == "f" then
    if not ARGV[2] then return redis.error_reply("invalid slot arguments") end
    local expired = reap_slots(KEYS, at_now)
    return { redis.call("ZREM", KEYS[1], ARGV[2]), expired }
  end
  return redis.error_reply("unknown slot operation " .. tostring(op))
end
