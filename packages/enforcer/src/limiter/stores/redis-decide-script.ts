/**
 * The Lua script behind `RedisStore`: every algorithm of the limiter core, layered decisions,
 * peek and the shaper, in one script so that a decision is one atomic round trip.
 *
 * It MIRRORS the pure core, operation for operation, so that Redis and the in-process store make
 * bit-identical decisions (the contract and differential tests prove it):
 * - `packages/enforcer/src/limiter/numeric.ts`: UNIT_TOLERANCE, MS_TOLERANCE, ceilMs, wholeUnits, windowStartOf,
 *   windowsBetween, timeNoiseMs
 * - `fixed-window.ts`, `sliding-log.ts`, `sliding-window.ts`, `token-bucket.ts`, `leaky-meter.ts`,
 *   `leaky-shaper.ts`: one `step_*` function each, same expressions in the same order (doubles are
 *   not associative, so `(a * b) / c` stays `(a * b) / c`)
 * - `arguments.ts`: LIMIT_BOUNDS (checked again here, so that a direct caller cannot hang Redis)
 *   and `numeric.ts`: RETRY_CORRECTION_STEPS
 * - `layered.ts`: admitted only if every enforced check admits; on admission every check writes
 *   its stepped state, on rejection only the checks that rejected do (a token bucket's refill,
 *   expired log entries dropped), so a rejection consumes from none.
 * Change one side and the other in the same commit.
 *
 * Lua numbers are IEEE doubles like JS numbers. The places where the two languages differ are
 * handled explicitly: JS `%` is C `fmod` (Lua's `%` floors), JS `Math.round` rounds half up, and
 * fractional numbers cross the boundary as `%.17g` text (Redis truncates a Lua number in a reply
 * to an integer, and `tostring` keeps only 14 digits); every number the script replies with is
 * whole.
 *
 * Protocol (`RedisStore` builds it). One call carries one decision or a batch of them, evaluated
 * one after another (a later decision sees what an earlier one wrote), atomically as a whole:
 *   ARGV[1]  expiry margin in ms added to every key's lifetime
 *   then per decision one argument "<op> <now> <cost> <n>": op "d" decide, "p" peek (writes
 *            nothing), "s" shape, "q" peek a shaper; now in ms, or "-" for Redis `TIME`
 *            (production; read once per call); n checks, each one argument
 *            "<algorithm code> <first parameter> <second parameter> <mode>", mode "e" enforce or
 *            "d" dry-run. (Few, short arguments: the client encodes and Redis parses less.)
 *            Codes and parameters:
 *            1 fixed-window (limit, windowMs)      2 sliding-log (limit, windowMs)
 *            3 sliding-window (limit, windowMs)    4 token-bucket (capacity, refillPerSec)
 *            5 leaky-meter (burst, drainPerSec)    6 leaky-shaper (maxQueue, drainPerSec)
 *   KEYS     each decision's n keys, in order (on Redis Cluster all in one slot: one subject)
 * Reply, flat, per check: `code, remaining, retryAfterMs, resetAfterMs` (code 0 allowed,
 * 1 limit-exceeded, 2 cost-exceeds-capacity, 3 queue-full), plus `delayMs` for a shaper; after a
 * decide or peek's checks, the time it used (`%.17g` text) and its index in the call (0 first).
 * Numbers are integers, or `%.17g` text from 2^53 up.
 *
 * Stored state: a sliding log is a sorted set (score = instant, member = `<12 hex digits of a
 * per-key sequence>:<cost>`, unique even for equal instants and costs, and ordered as the core's
 * array is). Every other algorithm is a string `struct.pack("<B d...")`: a byte naming the
 * algorithm (the code above), then its numbers as raw doubles, exact and 9 to 25 bytes. A state of
 * another algorithm (another byte, or a sorted set where a string is expected and vice versa) is
 * ignored, so an algorithm switch starts the bucket fresh, as `step-limit.ts` does. (The sequence
 * restarts whenever a log empties; 12 hex digits last for 2^48 admissions to one live log.)
 *
 * Commands per call: one MGET for every key's string state, a ZRANGE per sliding log, and per
 * check that writes one SET with PX (a log: its ZADD/ZREM and a PEXPIRE), plus TIME once.
 *
 * Expiry: every write sets a TTL of the time until the state is indistinguishable from no state
 * (window over, bucket full, meter drained, newest log entry out of the window), rounded up, plus
 * the margin; capped at 2^52 ms. No shebang line: Redis 7.0 rejects some flags, and the defaults
 * (writes allowed, effects replication, `TIME` allowed before writes) are what this needs.
 *
 * The text is a template literal: no backslashes and no dollar-brace in the Lua, or JS rewrites
 * them before Redis sees the script.
 */
export const REDIS_DECIDE_LUA = `
local UNIT_TOLERANCE = 1e-9
local MS_TOLERANCE = 1e-6
local RETRY_CORRECTION_STEPS = 8
local MAX_SIZE, MIN_WINDOW_MS, MAX_DURATION_MS = 1e15, 0.001, 1e12
local MIN_RATE, MAX_RATE, MAX_ABS_TIME_MS = 1e-9, 1e15, 2 ^ 52
local MAX_COST = 1.7976931348623157e308
local EPSILON = 2 ^ -52
local MAX_TTL_MS = 2 ^ 52

local floor, ceil, fmod, abs, min = math.floor, math.ceil, math.fmod, math.abs, math.min
local fmt, byte, sub, match = string.format, string.byte, string.sub, string.match
local pack, sunpack = struct.pack, struct.unpack
local call, pcall_ = redis.call, redis.pcall

-- Set for each decision of the call, read by the step functions below.
local now, cost
local margin_ms = tonumber(ARGV[1])

-- numeric.ts ---------------------------------------------------------------------------------

local function ceil_ms(d)
  if d <= MS_TOLERANCE then return 0 end
  return ceil(d - MS_TOLERANCE)
end

local function whole_units(available, limit)
  local units = floor(available + UNIT_TOLERANCE)
  if units <= 0 then return 0 end
  if units < limit then return units end
  return floor(limit)
end

local function window_start_of(t, w)
  local into = fmod(t, w)
  if into < 0 then return t - into - w end
  return t - into
end

-- JS Math.round: nearest, halves towards +Infinity. x - floor(x) is exact for doubles.
local function js_round(x)
  local f = floor(x)
  if x - f >= 0.5 then return f + 1 end
  return f
end

local function windows_between(earlier, later, w)
  return js_round((later - earlier) / w)
end

local function evaluated_at(t)
  return t + abs(t) * 8 * EPSILON
end

local function drain_ms(units, rate)
  return (units * 1000) / rate
end

-- fixed-window.ts: state {windowStartMs, count} ---------------------------------------------

local function fw_current(st, w, t)
  local start = window_start_of(t, w)
  if st and windows_between(st[1], start, w) <= 0 then return start, st[2] end
  return start, 0
end

local function step_fixed_window(st, limit, w)
  local ws, count = fw_current(st, w, now)
  local window_end = ws + w
  local available = limit - count
  local reset = 0
  if count > 0 then reset = ceil_ms(window_end - now) end
  if cost > limit then return 2, whole_units(available, limit), 0, reset, { ws, count } end
  if cost <= available + UNIT_TOLERANCE then
    local c = count + cost
    local r = 0
    if c > 0 then r = ceil_ms(window_end - now) end
    return 0, whole_units(available - cost, limit), 0, r, { ws, c }
  end
  local current = { ws, count }
  local retry = ceil_ms(window_end - now)
  for step = 0, RETRY_CORRECTION_STEPS do
    local _, c = fw_current(current, w, now + retry)
    if c + cost <= limit + UNIT_TOLERANCE then break end
    if step == RETRY_CORRECTION_STEPS then
      if reset > retry then retry = reset end
      break
    end
    retry = retry + 1
  end
  return 1, whole_units(available, limit), retry, reset, current
end

-- sliding-window.ts: state {windowStartMs, currentCount, previousCount} ----------------------

local function sw_current(st, w, t)
  local start = window_start_of(t, w)
  if st then
    local later = windows_between(st[1], start, w)
    if later <= 0 then return start, st[2], st[3] end
    if later == 1 then return start, 0, st[2] end
  end
  return start, 0, 0
end

local function sw_estimate(ws, curr, prev, w, t)
  local elapsed = (t - ws) / w
  return curr + prev * (1 - elapsed)
end

local function sw_reset(ws, curr, prev, w)
  if curr > 0 then return ceil_ms(ws + 2 * w - now) end
  if prev > 0 then return ceil_ms(ws + w - now) end
  return 0
end

local function step_sliding_window(st, limit, w)
  local ws, curr, prev = sw_current(st, w, now)
  local available = limit - sw_estimate(ws, curr, prev, w, now)
  if cost > limit then
    return 2, whole_units(available, limit), 0, sw_reset(ws, curr, prev, w), { ws, curr, prev }
  end
  if cost <= available + UNIT_TOLERANCE then
    local c = curr + cost
    return 0, whole_units(available - cost, limit), 0, sw_reset(ws, c, prev, w), { ws, c, prev }
  end
  local room_at
  local room_in_current = limit - cost - curr
  if room_in_current >= 0 then
    room_at = ws + w * (1 - room_in_current / prev)
  else
    room_at = (ws + w) + w * (1 - (limit - cost) / curr)
  end
  local current = { ws, curr, prev }
  local reset = sw_reset(ws, curr, prev, w)
  local retry = ceil_ms(room_at - now)
  for step = 0, RETRY_CORRECTION_STEPS do
    local at = now + retry
    local a, b, c = sw_current(current, w, at)
    if sw_estimate(a, b, c, w, at) + cost <= limit + UNIT_TOLERANCE then break end
    if step == RETRY_CORRECTION_STEPS then
      if reset > retry then retry = reset end
      break
    end
    retry = retry + 1
  end
  return 1, whole_units(available, limit), retry, reset, current
end

-- token-bucket.ts: state {tokens, lastMs} ----------------------------------------------------

local function tb_tokens_at(st, capacity, rate, t)
  if not st then return capacity end
  local elapsed = t - st[2]
  local refilled = st[1]
  if elapsed > 0 then refilled = st[1] + (elapsed * rate) / 1000 end
  return min(refilled, capacity)
end

local function ms_until(tokens, target, rate)
  return ceil_ms(((target - tokens) * 1000) / rate)
end

local function step_token_bucket(st, capacity, rate)
  local tokens = tb_tokens_at(st, capacity, rate, now)
  local refilled = { tokens, now }
  local reset = ms_until(tokens, capacity, rate)
  if cost > capacity then return 2, whole_units(tokens, capacity), 0, reset, refilled end
  if cost <= tokens + UNIT_TOLERANCE then
    local left = 0
    if tokens > cost then left = tokens - cost end
    return 0, whole_units(left, capacity), 0, ms_until(left, capacity, rate), { left, now }
  end
  local retry = ms_until(tokens, cost, rate)
  for step = 0, RETRY_CORRECTION_STEPS do
    if tb_tokens_at(refilled, capacity, rate, now + retry) + UNIT_TOLERANCE >= cost then break end
    if step == RETRY_CORRECTION_STEPS then
      if reset > retry then retry = reset end
      break
    end
    retry = retry + 1
  end
  return 1, whole_units(tokens, capacity), retry, reset, refilled
end

-- leaky-meter.ts: state {zeroRoomAtMs} ------------------------------------------------------

local function lm_room_at(st, burst, rate, at)
  if not st then return burst end
  local room = ((at - st[1]) * rate) / 1000
  if room <= 0 then return 0 end
  return min(room, burst)
end

local function step_leaky_meter(st, burst, rate)
  local at = evaluated_at(now)
  local room = lm_room_at(st, burst, rate, at)
  local full_at = now - drain_ms(burst, rate)
  local current = { full_at }
  if st and st[1] >= full_at then current = st end
  local reset = ceil_ms(drain_ms(burst - room, rate))
  if cost > burst then return 2, whole_units(room, burst), 0, reset, current end
  if cost <= room + UNIT_TOLERANCE then
    local left = 0
    if room > cost then left = room - cost end
    return 0, whole_units(left, burst), 0, ceil_ms(drain_ms(burst - left, rate)),
      { current[1] + drain_ms(cost, rate) }
  end
  local retry = ceil_ms(current[1] + drain_ms(cost, rate) - at)
  for step = 0, RETRY_CORRECTION_STEPS do
    if lm_room_at(current, burst, rate, evaluated_at(now + retry)) + UNIT_TOLERANCE >= cost then
      break
    end
    if step == RETRY_CORRECTION_STEPS then
      if reset > retry then retry = reset end
      break
    end
    retry = retry + 1
  end
  return 1, whole_units(room, burst), retry, reset, current
end

-- leaky-shaper.ts: state {drainedAtMs}; returns delayMs as a sixth value --------------------

local function sh_queued_at(st, rate, at)
  if not st or st[1] <= at then return 0 end
  return ((st[1] - at) * rate) / 1000
end

local function step_leaky_shaper(st, max_queue, rate)
  local at = evaluated_at(now)
  local queued = sh_queued_at(st, rate, at)
  local current = st or { now }
  local room = max_queue - queued
  local reset = ceil_ms(current[1] - at)
  if cost > max_queue then return 2, whole_units(room, max_queue), 0, reset, current, 0 end
  if cost <= room + UNIT_TOLERANCE then
    local release = now
    if current[1] > at then release = current[1] end
    local drained = release + drain_ms(cost, rate)
    return 0, whole_units(room - cost, max_queue), 0, ceil_ms(drained - now), { drained },
      ceil_ms(release - now)
  end
  local room_at = current[1] - drain_ms(max_queue - cost, rate)
  local retry = ceil_ms(room_at - at)
  for step = 0, RETRY_CORRECTION_STEPS do
    if max_queue - sh_queued_at(current, rate, evaluated_at(now + retry)) + UNIT_TOLERANCE
      >= cost then
      break
    end
    if step == RETRY_CORRECTION_STEPS then
      if reset > retry then retry = reset end
      break
    end
    retry = retry + 1
  end
  return 3, whole_units(room, max_queue), retry, reset, current, 0
end

-- sliding-log.ts: a sorted set -------------------------------------------------------------
-- The state handed around is a table: at[], cost[], seq[] (live entries, oldest first), n, plus
-- what writing it takes: dropped (how many stored entries expired), moved[] (indices whose
-- instant moved back to now after the clock went back), old_member (a merged entry's previous
-- member), next_seq, and foreign (the key holds another algorithm's string).

local function sl_member(seq, c)
  return fmt("%012x:%.17g", seq, c)
end

local function sl_read(key)
  local reply = pcall_("ZRANGE", key, 0, -1, "WITHSCORES")
  local log = { at = {}, cost = {}, seq = {}, n = 0, dropped = 0, moved = {}, next_seq = 1 }
  if reply.err then
    log.foreign = true
    return log
  end
  local n = 0
  for i = 1, #reply, 2 do
    n = n + 1
    local member = reply[i]
    log.seq[n] = tonumber(sub(member, 1, 12), 16)
    log.cost[n] = tonumber(sub(member, 14))
    log.at[n] = tonumber(reply[i + 1])
  end
  log.n = n
  if n > 0 then log.next_seq = log.seq[n] + 1 end
  return log
end

-- liveEntries: drop entries at or before now - windowMs; move entries after now to now.
local function sl_live(stored, w)
  local cutoff = now - w
  local first = 1
  while first <= stored.n and stored.at[first] <= cutoff do first = first + 1 end
  local live = { at = {}, cost = {}, seq = {}, n = 0, dropped = first - 1, moved = {},
    next_seq = stored.next_seq, foreign = stored.foreign }
  for i = first, stored.n do
    local n = live.n + 1
    local a = stored.at[i]
    if a > now then
      a = now
      live.moved[#live.moved + 1] = n
    end
    live.at[n], live.cost[n], live.seq[n], live.n = a, stored.cost[i], stored.seq[i], n
  end
  return live
end

-- Sum of the costs of the entries still inside the window ending at t, in order.
local function sl_used_at(log, w, t)
  local cutoff = t - w
  local first = 1
  while first <= log.n and log.at[first] <= cutoff do first = first + 1 end
  local used = 0
  for i = first, log.n do used = used + log.cost[i] end
  return used
end

local function sl_reset(log, w)
  if log.n == 0 then return 0 end
  return ceil_ms(log.at[log.n] + w - now)
end

local function step_sliding_log(stored, limit, w)
  local live = sl_live(stored, w)
  local used = 0
  for i = 1, live.n do used = used + live.cost[i] end
  local available = limit - used
  if cost > limit then return 2, whole_units(available, limit), 0, sl_reset(live, w), live end
  if cost <= available + UNIT_TOLERANCE then
    if cost > 0 then
      local n = live.n
      if n > 0 and live.at[n] == now then
        live.old_member = sl_member(live.seq[n], live.cost[n])
        live.cost[n] = live.cost[n] + cost
        live.changed = n
      else
        n = n + 1
        live.at[n], live.cost[n], live.seq[n], live.n = now, cost, live.next_seq, n
        live.changed = n
      end
    end
    return 0, whole_units(available - cost, limit), 0, sl_reset(live, w), live
  end
  local excess = used + cost - limit
  local expired = 0
  local i = 1
  while i < live.n do
    expired = expired + live.cost[i]
    if expired >= excess - UNIT_TOLERANCE then break end
    i = i + 1
  end
  local reset = sl_reset(live, w)
  local retry = ceil_ms(live.at[i] + w - now)
  for step = 0, RETRY_CORRECTION_STEPS do
    if sl_used_at(live, w, now + retry) + cost <= limit + UNIT_TOLERANCE then break end
    if step == RETRY_CORRECTION_STEPS then
      if reset > retry then retry = reset end
      break
    end
    retry = retry + 1
  end
  return 1, whole_units(available, limit), retry, reset, live
end

-- storage -----------------------------------------------------------------------------------

local function ttl_arg(lifetime_ms)
  local ttl = ceil(lifetime_ms)
  if not (ttl > 0) then ttl = 0 end
  ttl = ttl + margin_ms
  if not (ttl < MAX_TTL_MS) then ttl = MAX_TTL_MS end
  return fmt("%d", ttl)
end

-- Byte length of the packed state of each algorithm code (2, the sliding log, is a sorted set).
local LENGTHS = { [1] = 17, [3] = 25, [4] = 17, [5] = 9, [6] = 9 }

-- Every key's value as the call began, read with MGET (false: absent or not a string, e.g. a
-- sliding log), in chunks that stay below Lua's limit on unpacked values. One MGET costs about
-- what one GET does, so a call reads its strings for the price of one command.
local initial = {}
for first = 1, #KEYS, 1000 do
  local values = call("MGET", unpack(KEYS, first, min(first + 999, #KEYS)))
  for i = 1, #values do initial[first + i - 1] = values[i] end
end
-- What this call has written so far, by key (false: no longer a string), for a later decision
-- of the same call on the same key.
local written = {}

-- The stored state of algorithm code at KEYS[index], or nil: no key, or another algorithm's.
local function read_packed(index, code)
  local value = written[KEYS[index]]
  if value == nil then value = initial[index] end
  if type(value) ~= "string" or byte(value, 1) ~= code or #value ~= LENGTHS[code] then
    return nil
  end
  if code == 3 then
    local _, a, b, c = sunpack("<Bddd", value)
    return { a, b, c }
  elseif code == 1 or code == 4 then
    local _, a, b = sunpack("<Bdd", value)
    return { a, b }
  end
  local _, a = sunpack("<Bd", value)
  return { a }
end

local function write_packed(key, code, st, p1, p2)
  local lifetime, value
  if code == 1 then
    lifetime = st[1] + p2 - now
    value = pack("<Bdd", code, st[1], st[2])
  elseif code == 3 then
    lifetime = st[1] + 2 * p2 - now
    value = pack("<Bddd", code, st[1], st[2], st[3])
  elseif code == 4 then
    lifetime = ((p1 - st[1]) * 1000) / p2
    value = pack("<Bdd", code, st[1], st[2])
  elseif code == 5 then
    lifetime = st[1] + drain_ms(p1, p2) - now
    value = pack("<Bd", code, st[1])
  else
    lifetime = st[1] - now
    value = pack("<Bd", code, st[1])
  end
  call("SET", key, value, "PX", ttl_arg(lifetime))
  written[key] = value
end

local function write_log(key, log, w)
  written[key] = false
  if log.foreign then call("DEL", key) end
  if log.dropped > 0 then call("ZREMRANGEBYRANK", key, 0, log.dropped - 1) end
  if log.n == 0 then
    call("DEL", key)
    return
  end
  if log.old_member then call("ZREM", key, log.old_member) end
  local args = {}
  for _, i in ipairs(log.moved) do
    if i ~= log.changed then
      args[#args + 1] = fmt("%.17g", log.at[i])
      args[#args + 1] = sl_member(log.seq[i], log.cost[i])
    end
  end
  if log.changed then
    local i = log.changed
    args[#args + 1] = fmt("%.17g", log.at[i])
    args[#args + 1] = sl_member(log.seq[i], log.cost[i])
  end
  if #args > 0 then call("ZADD", key, unpack(args)) end
  call("PEXPIRE", key, ttl_arg(log.at[log.n] + w - now))
end

-- A reply number: every one is a whole number >= 0. Below 2^53 a Lua number, which Redis sends as
-- an exact integer; above it (a limit of 1e300 units) text, which Redis would otherwise mangle.
local function num(x)
  if x < 9007199254740992 then return x end
  return fmt("%.17g", x)
end

-- arguments.ts: LIMIT_BOUNDS ----------------------------------------------------------------

-- Whether a check's parameters are within the limiter's bounds: a size from 0 to 1e15, a window
-- from 0.001 to 1e12 ms, a rate from 1e-9 to 1e15 per second that refills or drains the size
-- within 1e12 ms. (NaN fails every comparison.)
local function is_valid_check(code, p1, p2, mode)
  if not (p1 and p2 and (mode == "e" or mode == "d")) then return false end
  if not (p1 >= 0 and p1 <= MAX_SIZE) then return false end
  if code == 1 or code == 2 or code == 3 then
    return p2 >= MIN_WINDOW_MS and p2 <= MAX_DURATION_MS
  end
  if code == 4 or code == 5 or code == 6 then
    return p2 >= MIN_RATE and p2 <= MAX_RATE and (p1 * 1000) / p2 <= MAX_DURATION_MS
  end
  return false
end

-- decide / peek / shape, one decision after another ---------------------------------------

local reply = {}
local r = 0        -- reply fields written
local k = 0        -- KEYS used by earlier decisions
local a = 2        -- next ARGV
local redis_now    -- Redis TIME, read at most once per call
local d = -1       -- index of the current decision in the call
while a <= #ARGV do
  local op, t, c, n = match(ARGV[a], "^(%a) (%S+) (%S+) (%d+)$")
  if not op then return redis.error_reply("malformed decision " .. tostring(ARGV[a])) end
  if t == "-" then
    if not redis_now then
      local time = call("TIME")
      redis_now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
    end
    now = redis_now
  else
    now = tonumber(t)
  end
  cost = tonumber(c)
  d = d + 1
  local count = tonumber(n)
  -- The client validates (arguments.ts); these bounds keep a direct caller from hanging Redis.
  if not (now and now >= -MAX_ABS_TIME_MS and now <= MAX_ABS_TIME_MS) then
    return redis.error_reply("invalid time " .. tostring(t))
  end
  if not (cost and cost >= 0 and cost <= MAX_COST) then
    return redis.error_reply("invalid cost " .. tostring(c))
  end

  -- Each check: "<algorithm code> <first parameter> <second parameter> <mode>".
  local algorithms, firsts, seconds, modes = {}, {}, {}, {}
  for i = 1, count do
    local code, p1, p2, mode = match(ARGV[a + i], "^(%d) (%S+) (%S+) (%a)$")
    if not code then return redis.error_reply("malformed check " .. tostring(ARGV[a + i])) end
    algorithms[i], firsts[i], seconds[i], modes[i] = tonumber(code), tonumber(p1), tonumber(p2), mode
    if not is_valid_check(algorithms[i], firsts[i], seconds[i], mode) then
      return redis.error_reply("invalid check " .. tostring(ARGV[a + i]))
    end
  end

  if op == "s" or op == "q" then
    local key, max_queue, rate = KEYS[k + 1], firsts[1], seconds[1]
    local code, remaining, retry, reset, st, delay =
      step_leaky_shaper(read_packed(k + 1, 6), max_queue, rate)
    if op == "s" and code == 0 then write_packed(key, 6, st, max_queue, rate) end
    reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4], reply[r + 5] =
      code, num(remaining), num(retry), num(reset), num(delay)
    r = r + 5
  else
    local codes, states = {}, {}
    local is_allowed = true
    for i = 1, count do
      local algorithm, p1, p2 = algorithms[i], firsts[i], seconds[i]
      local code, remaining, retry, reset, st
      if algorithm == 1 then
        code, remaining, retry, reset, st = step_fixed_window(read_packed(k + i, 1), p1, p2)
      elseif algorithm == 2 then
        code, remaining, retry, reset, st = step_sliding_log(sl_read(KEYS[k + i]), p1, p2)
      elseif algorithm == 3 then
        code, remaining, retry, reset, st = step_sliding_window(read_packed(k + i, 3), p1, p2)
      elseif algorithm == 4 then
        code, remaining, retry, reset, st = step_token_bucket(read_packed(k + i, 4), p1, p2)
      elseif algorithm == 5 then
        code, remaining, retry, reset, st = step_leaky_meter(read_packed(k + i, 5), p1, p2)
      else
        return redis.error_reply("unknown algorithm code " .. tostring(algorithm))
      end
      if code ~= 0 and modes[i] == "e" then is_allowed = false end
      codes[i], states[i] = code, st
      reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] =
        code, num(remaining), num(retry), num(reset)
      r = r + 4
    end
    -- The time this decision used and its index in the call: the traffic record's order.
    reply[r + 1], reply[r + 2] = fmt("%.17g", now), d
    r = r + 2
    if op == "d" then
      for i = 1, count do
        if is_allowed or codes[i] ~= 0 then
          if algorithms[i] == 2 then
            write_log(KEYS[k + i], states[i], seconds[i])
          else
            write_packed(KEYS[k + i], algorithms[i], states[i], firsts[i], seconds[i])
          end
        end
      end
    end
  end
  k = k + count
  a = a + 1 + count
end

return reply
`;

/**
 * SHA-1 of `REDIS_DECIDE_LUA`, the name Redis caches the script under (EVALSHA). A unit test
 * recomputes it from the text, so an edit to the script without this constant fails the build.
 */
export const REDIS_DECIDE_SHA1 = "efd049b2e4a05854fd2cb665d0d0af3446f3e089";
