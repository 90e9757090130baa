/**
 * The Lua behind `RedisStore`: every algorithm of the limiter core, layered decisions, peek and
 * the shaper, in one function so that a decision is one atomic round trip.
 *
 * Two forms of the same code (`REDIS_DECIDE_BODY`, which defines `decide(KEYS, ARGV)`):
 * - `REDIS_DECIDE_LIBRARY`, a Redis function library (Redis 7.0+: `FUNCTION LOAD`, called with
 *   `FCALL REDIS_DECIDE_FUNCTION`). Its top level runs once, when the library is loaded, so every
 *   helper is made once and argument texts stay parsed between calls; a call runs `decide` only.
 *   This is what the store uses.
 * - `REDIS_DECIDE_LUA`, the same body plus `return decide(KEYS, ARGV)`, for EVALSHA: for a Redis
 *   that refuses functions (before 7.0, or an ACL without `FUNCTION`). Every call then runs the
 *   top level again, making every helper anew: about 5 us more per call on this machine.
 *
 * It MIRRORS the pure core, operation for operation, so that Redis and the in-process store make
 * bit-identical decisions (the contract and differential tests prove it):
 * - `packages/enforcer/src/limiter/numeric.ts`: UNIT_TOLERANCE, MS_TOLERANCE, ceilMs, wholeUnits, windowStartOf,
 *   windowsBetween, timeNoiseMs
 * - `fixed-window.ts`, `sliding-log.ts`, `sliding-window.ts`, `token-bucket.ts`, `leaky-meter.ts`,
 *   `leaky-shaper.ts`: one block each, same expressions in the same order (doubles are not
 *   associative, so `(a * b) / c` stays `(a * b) / c`)
 * - `arguments.ts`: LIMIT_BOUNDS (checked again here, so that a direct caller cannot hang Redis)
 *   and `numeric.ts`: RETRY_CORRECTION_STEPS
 * - `layered.ts`: admitted only if every enforced check admits; on admission every check writes
 *   its stepped state, on rejection only the checks that rejected do (a token bucket's refill,
 *   expired log entries dropped), so a rejection consumes from none.
 * Change one side and the other in the same commit.
 *
 * Lua numbers are IEEE doubles like JS numbers. The places where the two languages differ are
 * handled explicitly: JS `%` is C `fmod` (Lua's `%` floors), JS `Math.round` rounds half up, and
 * numbers cross the boundary as raw doubles (`struct.pack`) or `%.17g` text, never through
 * `tostring` (14 digits) or a Lua number in a reply (which Redis truncates to an integer).
 *
 * Protocol (`RedisStore` builds it). One call carries one decision or a batch of them, evaluated
 * one after another (a later decision sees what an earlier one wrote), atomically as a whole:
 *   ARGV[1]  expiry margin in ms added to every key's lifetime
 *   then per decision one argument "<op> <now> <cost> <n>": op "d" decide, "p" peek (writes
 *            nothing), "s" shape, "q" peek a shaper, or "<op> <now> <cost> <n> <units> <lifeMs>"
 *            with op "l": decide, and lease up to <units> more for up to <lifeMs> (see the lease
 *            block below; `RedisStore.decideLeasing`), or "r <now> <units> <n> <grantedAt>
 *            <lifeMs>": return a lease's unspent units (`RedisStore.returnLease`; grantedAt is
 *            the Redis time in ms of the call that granted them); now in ms, or "-" for Redis `TIME`
 *            (production; read once per call); n checks, each one argument
 *            "<algorithm code> <first parameter> <second parameter> <mode> <bucket>", mode "e"
 *            enforce or "d" dry-run, the bucket last (any characters). Codes and parameters:
 *            1 fixed-window (limit, windowMs)      2 sliding-log (limit, windowMs)
 *            3 sliding-window (limit, windowMs)    4 token-bucket (capacity, refillPerSec)
 *            5 leaky-meter (burst, drainPerSec)    6 leaky-shaper (maxQueue, drainPerSec)
 *   KEYS     per decision the subject's hash, then the key of each sliding log among its checks,
 *            in order (on Redis Cluster all in one slot: one subject)
 * Reply: one string of packed bytes (little-endian), per decision in order: per check
 * `<Bddd>` code, remaining, retryAfterMs, resetAfterMs (code 0 allowed, 1 limit-exceeded,
 * 2 cost-exceeds-capacity, 3 queue-full), a shaper's `<Bdddd>` with delayMs; after a lease's
 * checks `<dd>` the units granted and their lifetime in whole ms (0 0: none); a return's is `<d>`
 * per check, the units given back. Then, once for the
 * call, `<d>` Redis `TIME` in whole microseconds (the `now` of every decision at "-" is exactly
 * that / 1000), or 0 when no decision asked for it; a decision's place in the call is its order.
 * Every number is whole, and a double holds it exactly. (One string, not an array of integers:
 * Redis encodes it and the client decodes it for a fraction of the cost.)
 *
 * Stored state: one hash per subject (`<prefix>rl2:{<subject>}`), a field per bucket,
 * `:<bucket>`, holding a string `struct.pack("<B d...")`: a byte naming the algorithm (the code
 * above), then its numbers as raw doubles, exact and 9 to 25 bytes; a token bucket with leases out
 * is 49 bytes: tokens, time, then two reservations (units, until). A sliding log's entries are a
 * sorted set of its own (`<prefix>rl:{<subject>}:<bucket>`: score = instant, member = `<12 hex
 * digits of a per-key sequence>:<cost>`, unique even for equal instants and costs, and ordered as
 * the core's array is), and its field holds its algorithm byte alone (LOG_MARK). The field says
 * which algorithm the bucket has: a state of another algorithm (another byte, a wrong length, a
 * log whose field names another algorithm) is ignored, so an algorithm switch starts the bucket
 * fresh, as `step-limit.ts` does. (The sequence restarts whenever a log empties; 12 hex digits
 * last for 2^48 admissions to one live log.) One key per decision, however many layers: one
 * HMGET and one HSET, where a key per bucket took a read and a write each.
 *
 * Deploys: two releases of the script run side by side under their own library and function
 * names (or SHA-1s), each reading and writing this layout.
 *
 * Commands per decision: one HMGET (its fields and the deadline `x`), a ZRANGE per sliding
 * log, one HSET of what it writes, and a PEXPIRE when the deadline must move (see write_fields);
 * a log writes its ZADD/ZREM and a PEXPIRE. TIME once per call.
 *
 * Cost (the hot path, issue 19): what Redis spends per call besides the commands was mostly making
 * closures (the EVAL form still does, once per call); the library makes them once. The
 * algorithms are blocks of the main loop, not functions. Arguments are parsed once per distinct
 * text, and the reply is packed as it is made, so nothing is formatted per decision. Lua spends
 * most of a decision interpreting and calling, so the admitted paths of the token bucket and the
 * fixed and sliding windows (nearly every decision) write `ceil_ms`, `whole_units`,
 * `window_start_of`, `windows_between` and `math.min` out in place, and compute a rejection's
 * reset only when rejecting; one call's reply pieces go in one table kept between calls; a
 * one-field read and write call HMGET and HSET without `unpack`. Counted in instructions
 * (callgrind, redis-server replaying the same recorded batches): one limit 43.4k to 39.2k per
 * decision, three layers 90.4k to 82.2k (rate-limiter-flexible's one counter: 48.4k). Packing a
 * decision's checks' replies into one string cost more than one string each (2.6k more for three).
 *
 * Expiry: a key's TTL covers the time until every state written in it is indistinguishable from
 * no state (window over, bucket full, meter drained, newest log entry out of the window), rounded
 * up, plus the margin; the subject's hash gets twice that when its TTL has to move (write_fields),
 * so an idle subject lives at most twice as long as its state needs; capped at 2^52 ms. No shebang
 * line: Redis 7.0 rejects some flags, and the defaults (writes allowed, effects replication,
 * `TIME` allowed before writes) are what this needs.
 *
 * The text is a template literal: no backslashes and no dollar-brace in the Lua, or JS rewrites
 * them before Redis sees the script.
 */
export const REDIS_DECIDE_BODY = `

-- What the script takes from Redis's Lua, bound by the first call: a function library is loaded
-- with an empty global table (Redis 7.0), so nothing at the top level may read a global.
local floor, ceil, fmod, min, byte, sub, find, sunpack, pack, fmt, match
local call, pcall_, error_reply, unpack_, concat
-- A sliding log's field in the subject's hash: its algorithm's byte alone (the entries are in the
-- log's own key). See read_fields.
local LOG_MARK
local function bind()
  floor, ceil, fmod, min = math.floor, math.ceil, math.fmod, math.min
  byte, sub, find, match, fmt = string.byte, string.sub, string.find, string.match, string.format
  sunpack, pack = struct.unpack, struct.pack
  call, pcall_, error_reply, unpack_ = redis.call, redis.pcall, redis.error_reply, unpack
  concat = table.concat
  LOG_MARK = pack("<B", 2)
end
local UNIT_TOLERANCE, RETRY_CORRECTION_STEPS = 1e-9, 8
local MAX_TTL_MS = 2 ^ 52

-- numeric.ts

-- ceilMs (MS_TOLERANCE = 1e-6)
local function ceil_ms(d)
  if d <= 1e-6 then return 0 end
  return ceil(d - 1e-6)
end

-- wholeUnits (UNIT_TOLERANCE = 1e-9)
local function whole_units(available, limit)
  local units = floor(available + 1e-9)
  if units <= 0 then return 0 end
  if units < limit then return units end
  return floor(limit)
end

-- windowStartOf: JS % is C fmod.
local function window_start_of(t, w)
  local into = fmod(t, w)
  if into < 0 then return t - into - w end
  return t - into
end

-- windowsBetween: JS Math.round (nearest, halves towards +Infinity); x - floor(x) is exact.
local function windows_between(earlier, later, w)
  local x = (later - earlier) / w
  local f = floor(x)
  if x - f >= 0.5 then return f + 1 end
  return f
end

-- The call's expiry margin (ARGV[1]), and the current decision's time and cost.
local margin_ms, now, cost
-- The texts the margin and TIME's seconds were last read from, and the seconds as a number:
-- both repeat from call to call, and comparing texts (interned) costs less than tonumber.
local margin_text, seconds_text, seconds = false, false, 0

-- A TTL for a lifetime: rounded up, plus the margin, capped at 2^52 ms. Passed as a number, which
-- Redis turns into its %.17g text: exact, as every value here is whole and below 2^53.
local function ttl_of(lifetime_ms)
  local ttl = ceil(lifetime_ms)
  if not (ttl > 0) then ttl = 0 end
  ttl = ttl + margin_ms
  if not (ttl < MAX_TTL_MS) then ttl = MAX_TTL_MS end
  return ttl
end

-- Byte length of the packed state of each algorithm code (2, the sliding log, is a sorted set).
-- A token bucket with reservations (leases out) is 49 bytes.
-- With leases out, a token bucket adds two reservations (49 bytes), a window the instant its last
-- lease ends (8 bytes more).
local LENGTHS = { 17, false, 25, 17, 9, 9 }

-- A leased token bucket's tokens now, from its stored tokens at last_ms: refilled at rate up to
-- the capacity less the reservations alive at each moment (each cuts it until its end; ta <= tb).
local function reserved_refill(tokens, last_ms, size, rate, ra, ta, rb, tb)
  local t = last_ms
  if ra > 0 and ta > t and ta < now then
    local cap = size - ra
    if rb > 0 and tb > t then cap = cap - rb end
    tokens = min(tokens + ((ta - t) * rate) / 1000, cap)
    t = ta
  end
  if rb > 0 and tb > t and tb < now then
    tokens = min(tokens + ((tb - t) * rate) / 1000, size - rb)
    t = tb
  end
  local cap = size
  if ra > 0 and ta > t and ta >= now then cap = cap - ra end
  if rb > 0 and tb > t and tb >= now then cap = cap - rb end
  if now > t then tokens = tokens + ((now - t) * rate) / 1000 end
  return min(tokens, cap)
end

-- The sliding log's and the shaper's functions, made on first use (in a function library, once).
local step_sliding_log, write_log, step_leaky_shaper

-- arguments.ts: LIMIT_BOUNDS, checked again here so that a direct caller cannot hang Redis.
local MAX_SIZE, MIN_WINDOW_MS, MAX_DURATION_MS = 1e15, 0.001, 1e12
local MIN_RATE, MAX_RATE, MAX_ABS_TIME_MS = 1e-9, 1e15, 2 ^ 52
local MAX_COST = 1.7976931348623157e308
-- A lease's units and lifetime are at most 1e9 and 3600000 ms (written out where they are
-- checked: a function of Redis's Lua 5.1 may use at most 60 upvalues, and decide is near).

-- Parsed arguments by their text: decisions repeat the same few, so each is parsed and checked
-- once (in a function library, for as long as the library is loaded: at most MAX_PARSED texts,
-- then the caches start again, so hostile arguments cannot grow them without bound).
local heads, checks, parsed_count = {}, {}, 0
local MAX_PARSED = 4096
-- The call's reply, piece by piece: one table for every call, so that a call does not grow a new
-- one (the pieces past a call's own are left from earlier calls, and never read).
local reply_parts = {}
-- The current decision's checks: parsed argument, reply code and stepped state (s1 to s3 the
-- state's numbers; a sliding log's table in s1). Reused from one decision to the next.
local parsed, codes, s1, s2, s3, s4 = {}, {}, {}, {}, {}, {}
-- A token bucket's reservations, per check: { units, until, units, until } as read and then as
-- leased (nil: none). Made on first use in a call.
local res

-- The subject's hash: HMGET and HSET argument lists (reused from one decision to the next, the
-- first n entries used), and per check the packed state read (false: none) and a sliding log's
-- key.
local hm, hs, stored, log_keys = { "HMGET" }, { "HSET" }, {}, {}

-- Reads the deadline and the fields of the current decision's checks (parsed[1..count]) into
-- stored[1..count]. Returns the deadline's packed text (false: none) and whether the key holds
-- something other than a hash (then treated as no state, and replaced on the first write).
--
-- A bucket's field says which algorithm it belongs to now, so that switching algorithm starts
-- it fresh both ways although a sliding log keeps its entries elsewhere: a log writes LOG_MARK
-- there, any other algorithm its state. A log whose field holds another algorithm's state is
-- stale (its entries predate the switch): read as empty, and replaced when written.
local function read_fields(hkey, count)
  local got
  if count == 1 then
    got = pcall_("HMGET", hkey, "x", parsed[1][5])
  else
    hm[2], hm[3] = hkey, "x"
    for i = 1, count do hm[i + 3] = parsed[i][5] end
    got = pcall_(unpack_(hm, 1, count + 3))
  end
  if got.err then
    for i = 1, count do stored[i] = false end
    return false, true
  end
  for i = 1, count do stored[i] = got[i + 1] end
  return got[1], false
end

-- Writes hs[1..nh] (HSET key field value ...), with the key's TTL at least the TTL the longest
-- of the written states' lifetimes needs (ttl_of: plus the margin). The key's deadline is kept in
-- its field "x" (Redis time, ms), written with every TTL set: a write it covers leaves the TTL
-- as it is (HSET keeps it), and one it does not sets twice the TTL needed, so a busy key's TTL
-- is set about once per TTL (at least a second) instead of at every write, and an idle key lives
-- at most twice as long as its state needs. Every write with Redis TIME writes "x" whenever it
-- sets a TTL, so a key without "x" was not written that way: new, or written with a test clock.
-- With a test clock, whose time is not Redis's, no deadline is kept and the TTL only ever grows.
local function write_fields(hkey, nh, deadline, longest, is_test_time, foreign)
  if foreign then call("DEL", hkey) end
  local ttl = ttl_of(longest)
  if is_test_time then
    call(unpack_(hs, 1, nh))
    if call("PTTL", hkey) < ttl then call("PEXPIRE", hkey, ttl) end
    return
  end
  local known = 0
  if deadline and #deadline == 8 then known = sunpack("<d", deadline) end
  if known >= now + ttl and known <= now + MAX_TTL_MS then
    -- The usual write: one field, without the unpack.
    if nh == 4 then call("HSET", hkey, hs[3], hs[4]) else call(unpack_(hs, 1, nh)) end
    return
  end
  ttl = 2 * ttl
  if not (ttl < MAX_TTL_MS) then ttl = MAX_TTL_MS end
  hs[nh + 1], hs[nh + 2] = "x", pack("<d", now + ttl)
  call(unpack_(hs, 1, nh + 2))
  call("PEXPIRE", hkey, ttl)
end

local function decide(KEYS, ARGV)
if not floor then bind() end
if ARGV[1] ~= margin_text then
  margin_text = ARGV[1]
  margin_ms = tonumber(margin_text)
end
res = nil
local reply = reply_parts  -- the reply's packed pieces: reply[1..r + 1] (see reply_parts)
local r = 0
local k = 0        -- KEYS used by earlier decisions
local a = 2        -- next ARGV
local argc = #ARGV
local redis_now, redis_now_us  -- Redis TIME, read at most once per call
while a <= argc do
  local text = ARGV[a]
  local head = heads[text]
  if not head then
    local op, t, c, n, rest = match(text, "^(%a) (%S+) (%S+) (%d+)(.*)$")
    if not op then return error_reply("malformed decision " .. text) end
    -- A lease ("l") adds "<units wanted> <lifetime wanted in ms>", a lease's return ("r")
    -- "<time the units were granted> <their lifetime in ms>"; no other op has more.
    local want, life = 0, 0
    if op == "l" then
      want, life = match(rest, "^ (%d+) (%d+)$")
      want, life = tonumber(want), tonumber(life)
      if not (want and life and want <= 1e9 and life <= 3600000) then
        return error_reply("malformed decision " .. text)
      end
    elseif op == "r" then
      want, life = match(rest, "^ (%S+) (%d+)$")
      want, life = tonumber(want), tonumber(life)
      if not (want and life and want >= -MAX_ABS_TIME_MS and want <= MAX_ABS_TIME_MS
        and life <= 3600000) then
        return error_reply("malformed decision " .. text)
      end
    elseif rest ~= "" then
      return error_reply("malformed decision " .. text)
    end
    local at = false
    if t ~= "-" then
      at = tonumber(t)
      if not (at and at >= -MAX_ABS_TIME_MS and at <= MAX_ABS_TIME_MS) then
        return error_reply("invalid time " .. t)
      end
    end
    local c_num = tonumber(c)
    if not (c_num and c_num >= 0 and c_num <= MAX_COST) then
      return error_reply("invalid cost " .. c)
    end
    head = { op, at, c_num, tonumber(n), want, life }
    -- A return's text names its grant's instant, so it never repeats: not kept.
    if op ~= "r" then
      if parsed_count >= MAX_PARSED then heads, checks, parsed_count = {}, {}, 0 end
      heads[text] = head
      parsed_count = parsed_count + 1
    end
  end
  local op, count = head[1], head[4]
  if head[2] then
    now = head[2]
  else
    if not redis_now then
      local time = call("TIME")
      if time[1] ~= seconds_text then
        seconds_text = time[1]
        seconds = tonumber(seconds_text)
      end
      redis_now_us = seconds * 1000000 + tonumber(time[2])
      redis_now = redis_now_us / 1000
    end
    now = redis_now
  end
  cost = head[3]

  -- Each check: "<algorithm code> <first parameter> <second parameter> <mode> <bucket>", the
  -- bucket last (it may hold any character); its field in the subject's hash is ":<bucket>".
  for i = 1, count do
    local check_text = ARGV[a + i]
    local check = checks[check_text]
    if not check then
      local code, p1, p2, mode, bucket = match(check_text, "^(%d) (%S+) (%S+) (%a) (.*)$")
      if not code then return error_reply("malformed check " .. tostring(check_text)) end
      code, p1, p2 = tonumber(code), tonumber(p1), tonumber(p2)
      -- A size from 0 to 1e15, a window from 0.001 to 1e12 ms, a rate from 1e-9 to 1e15 per
      -- second that refills or drains the size within 1e12 ms. (NaN fails every comparison.)
      local is_valid = p1 and p2 and (mode == "e" or mode == "d") and p1 >= 0 and p1 <= MAX_SIZE
      if is_valid then
        if code == 1 or code == 2 or code == 3 then
          is_valid = p2 >= MIN_WINDOW_MS and p2 <= MAX_DURATION_MS
        elseif code == 4 or code == 5 or code == 6 then
          is_valid = p2 >= MIN_RATE and p2 <= MAX_RATE and (p1 * 1000) / p2 <= MAX_DURATION_MS
        else
          is_valid = false
        end
      end
      if not is_valid then return error_reply("invalid check " .. check_text) end
      check = { code, p1, p2, mode == "e", ":" .. bucket, bucket }
      if parsed_count >= MAX_PARSED then heads, checks, parsed_count = {}, {}, 0 end
      checks[check_text] = check
      parsed_count = parsed_count + 1
    end
    parsed[i] = check
  end

  -- KEYS: the subject's hash, then a key per sliding log, in check order.
  local hkey = KEYS[k + 1]
  local used = 1
  for i = 1, count do
    if parsed[i][1] == 2 then
      used = used + 1
      log_keys[i] = KEYS[k + used]
    end
  end
  if not KEYS[k + used] then return error_reply("too few keys for decision " .. text) end
  local deadline, foreign = read_fields(hkey, count)

  if op == "r" then
    -- A lease's return (lease-table.ts): units a gateway was granted with a lease ("l", below)
    -- and never spent, given back once it has stopped spending them, so a limit with a slow
    -- refill or a long window does not lose them. Per check, exactly what the lease charged is
    -- undone, or nothing:
    -- - fixed window: taken off the count of the window the grant was made in, while that
    --   window runs (after it, the units are no longer the window's to give);
    -- - sliding window: off the current count of that window, or off the previous count once
    --   the next window began (the estimate weighs it);
    -- - token bucket: the tokens come back, and while the grant's lifetime runs, as many
    --   reserved units are released, earliest reservation first. Its own reservation ends no
    --   earlier than the earliest alive one, so releasing from that one never lets the bucket
    --   refill into room another lease still holds. Back, the tokens are capped at the capacity
    --   less what is still reserved, so no burst exceeds the capacity. After its lifetime the
    --   reservations are left as they are (the grant's may have ended, and another's must not
    --   shrink): the tokens alone come back, capped the same way.
    -- Another algorithm's state (the limit changed since) is left alone. The reply is, per
    -- check, the units given back.
    local units, granted_at = cost, head[5]
    local granted_end = granted_at + head[6]
    local nh, longest = 2, 0
    hs[2] = hkey
    for i = 1, count do
      local check = parsed[i]
      local algorithm, p1, p2 = check[1], check[2], check[3]
      local value = stored[i]
      local back, packed, lifetime = 0, false, 0
      if value and byte(value, 1) == algorithm then
        if algorithm == 1 and (#value == 17 or #value == 25) then
          local _, ws, used = sunpack("<Bdd", value)
          local leased_until = 0
          if #value == 25 then _, ws, used, leased_until = sunpack("<Bddd", value) end
          local granted_ws = window_start_of(granted_at, p2)
          if windows_between(granted_ws, ws, p2) == 0
            and windows_between(granted_ws, window_start_of(now, p2), p2) == 0 then
            back = min(units, used)
            if back > 0 and leased_until > now then
              packed = pack("<Bddd", 1, ws, used - back, leased_until)
            elseif back > 0 then
              packed = pack("<Bdd", 1, ws, used - back)
            end
            lifetime = ws + p2 - now
          end
        elseif algorithm == 3 and (#value == 25 or #value == 33) then
          local _, ws, curr, prev = sunpack("<Bddd", value)
          local leased_until = 0
          if #value == 33 then _, ws, curr, prev, leased_until = sunpack("<Bdddd", value) end
          local granted_ws = window_start_of(granted_at, p2)
          local stored = windows_between(granted_ws, ws, p2)
          -- Two windows on, neither count is read again: nothing to give back.
          if windows_between(granted_ws, window_start_of(now, p2), p2) <= 1 then
            if stored == 0 then
              back = min(units, curr)
              curr = curr - back
            elseif stored == 1 then
              back = min(units, prev)
              prev = prev - back
            end
          end
          if back > 0 and leased_until > now then
            packed = pack("<Bdddd", 3, ws, curr, prev, leased_until)
          elseif back > 0 then
            packed = pack("<Bddd", 3, ws, curr, prev)
          end
          lifetime = ws + 2 * p2 - now
        elseif algorithm == 4 and #value == 49 then
          local _, tokens, last_ms, ra, ta, rb, tb = sunpack("<Bdddddd", value)
          tokens = reserved_refill(tokens, last_ms, p1, p2, ra, ta, rb, tb)
          if ta <= now then ra, ta = 0, 0 end
          if tb <= now then rb, tb = 0, 0 end
          if ra == 0 then ra, ta, rb, tb = rb, tb, 0, 0 end
          if now < granted_end then
            local released = min(ra, units)
            ra = ra - released
            if units > released then rb = rb - min(rb, units - released) end
            if rb == 0 then tb = 0 end
            if ra == 0 then ra, ta, rb, tb = rb, tb, 0, 0 end
          end
          back = min(units, p1 - ra - rb - tokens)
          if back < 0 then back = 0 end
          local full = tokens + back
          local till = ta
          if tb > till then till = tb end
          if ra > 0 then
            packed = pack("<Bdddddd", 4, full, now, ra, ta, rb, tb)
            lifetime = (till - now) + ((p1 - full) * 1000) / p2
          else
            packed, lifetime = pack("<Bdd", 4, full, now), ((p1 - full) * 1000) / p2
          end
        elseif algorithm == 4 and #value == 17 then
          local _, tokens, last_ms = sunpack("<Bdd", value)
          if now > last_ms then tokens = tokens + ((now - last_ms) * p2) / 1000 end
          if p1 < tokens then tokens = p1 end
          back = min(units, p1 - tokens)
          if back < 0 then back = 0 end
          local full = tokens + back
          packed, lifetime = pack("<Bdd", 4, full, now), ((p1 - full) * 1000) / p2
        end
      end
      if packed then
        hs[nh + 1], hs[nh + 2] = check[5], packed
        nh = nh + 2
        if lifetime > longest then longest = lifetime end
      end
      r = r + 1
      reply[r] = pack("<d", back)
    end
    if nh > 2 then write_fields(hkey, nh, deadline, longest, head[2], foreign) end
  elseif op == "s" or op == "q" then
    if not step_leaky_shaper then
      -- leaky-shaper.ts: state drainedAtMs (nil: none); returns delayMs as a sixth value.
      -- timeNoiseMs: t plus 8 units in the last place of 1 (EPSILON = 2^-52), scaled by |t|.
      local function evaluated_at(t)
        return t + math.abs(t) * 8 * (2 ^ -52)
      end

      local function sh_queued_at(drained_at, rate, at)
        if not drained_at or drained_at <= at then return 0 end
        return ((drained_at - at) * rate) / 1000
      end

      step_leaky_shaper = function(st, max_queue, rate)
        local at = evaluated_at(now)
        local queued = sh_queued_at(st, rate, at)
        local current = st or now
        local room = max_queue - queued
        local reset = ceil_ms(current - at)
        if cost > max_queue then return 2, whole_units(room, max_queue), 0, reset, current, 0 end
        if cost <= room + UNIT_TOLERANCE then
          local release = now
          if current > at then release = current end
          local drained = release + (cost * 1000) / rate
          return 0, whole_units(room - cost, max_queue), 0, ceil_ms(drained - now), drained,
            ceil_ms(release - now)
        end
        local room_at = current - ((max_queue - cost) * 1000) / rate
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
    end
    local max_queue, rate = parsed[1][2], parsed[1][3]
    local value, drained_at = stored[1], nil
    if type(value) == "string" and byte(value, 1) == 6 and #value == 9 then
      drained_at = select(2, sunpack("<Bd", value))
    end
    local code, remaining, retry, reset, drained, delay =
      step_leaky_shaper(drained_at, max_queue, rate)
    if op == "s" and code == 0 then
      hs[2], hs[3], hs[4] = hkey, parsed[1][5], pack("<Bd", 6, drained)
      write_fields(hkey, 4, deadline, drained - now, head[2], foreign)
    end
    r = r + 1
    reply[r] = pack("<Bdddd", code, remaining, retry, reset, delay)
  else
    local is_allowed = true
    for i = 1, count do
      local check = parsed[i]
      local algorithm, p1, p2 = check[1], check[2], check[3]
      local code, remaining, retry, reset
      -- The packed state in the check's field, or nil: none, or another algorithm's (so an
      -- algorithm switch starts the bucket fresh, as step-limit.ts does).
      local value
      if algorithm ~= 2 then
        value = stored[i]
        local n = value and #value
        if not (value and byte(value, 1) == algorithm and (n == LENGTHS[algorithm]
          or (algorithm == 4 and n == 49)
          or ((algorithm == 1 or algorithm == 3) and n == LENGTHS[algorithm] + 8))) then
          value = nil
        end
      end
      if algorithm == 4 then
        -- token-bucket.ts: state {tokens, lastMs}; p1 capacity, p2 refillPerSec. While leases
        -- are out (see the lease below), the state also holds up to two reservations (units,
        -- until): the capacity is short of each until it ends.
        local tokens = p1
        local ra, ta, rb, tb = 0, 0, 0, 0
        if res then res[i] = nil end
        if value and #value == 49 then
          local _, stored_tokens, last_ms
          _, stored_tokens, last_ms, ra, ta, rb, tb = sunpack("<Bdddddd", value)
          tokens = reserved_refill(stored_tokens, last_ms, p1, p2, ra, ta, rb, tb)
          if ta <= now then ra, ta = 0, 0 end
          if tb <= now then rb, tb = 0, 0 end
          if ra == 0 then ra, ta, rb, tb = rb, tb, 0, 0 end
          if ra > 0 then
            res = res or {}
            res[i] = { ra, ta, rb, tb }
          end
        elseif value then
          local _, stored_tokens, last_ms = sunpack("<Bdd", value)
          local elapsed = now - last_ms
          tokens = stored_tokens
          if elapsed > 0 then tokens = stored_tokens + (elapsed * p2) / 1000 end
          if p1 < tokens then tokens = p1 end
        end
        s1[i], s2[i] = tokens, now
        if cost <= tokens + UNIT_TOLERANCE and cost <= p1 then
          -- Admitted: the common path, with ceil_ms and whole_units written out.
          local left = 0
          if tokens > cost then left = tokens - cost end
          remaining = floor(left + 1e-9)
          if remaining <= 0 then remaining = 0 elseif not (remaining < p1) then remaining = floor(p1) end
          local d = ((p1 - left) * 1000) / p2
          if d <= 1e-6 then reset = 0 else reset = ceil(d - 1e-6) end
          code, retry = 0, 0
          s1[i] = left
        elseif cost > p1 then
          code, remaining, retry = 2, whole_units(tokens, p1), 0
          reset = ceil_ms(((p1 - tokens) * 1000) / p2)
        else
          local reset_ms = ceil_ms(((p1 - tokens) * 1000) / p2)
          retry = ceil_ms(((cost - tokens) * 1000) / p2)
          for step = 0, RETRY_CORRECTION_STEPS do
            local elapsed = (now + retry) - now
            local refilled = tokens
            if elapsed > 0 then refilled = tokens + (elapsed * p2) / 1000 end
            local cap = p1
            if ra > 0 and ta > now + retry then cap = cap - ra end
            if rb > 0 and tb > now + retry then cap = cap - rb end
            if min(refilled, cap) + UNIT_TOLERANCE >= cost then break end
            if step == RETRY_CORRECTION_STEPS then
              if reset_ms > retry then retry = reset_ms end
              break
            end
            retry = retry + 1
          end
          -- Leases out may give tokens back before their reservation ends (lease-table.ts): the
          -- answer holds only until then.
          if ra > 0 and ta > now then
            local back_by = ceil_ms(ta - now)
            if back_by < retry then retry = back_by end
          end
          code, remaining, reset = 1, whole_units(tokens, p1), reset_ms
        end
      elseif algorithm == 1 then
        -- fixed-window.ts: state {windowStartMs, count}; p1 limit, p2 windowMs. (window_start_of
        -- and windows_between written out.)
        local into = fmod(now, p2)
        local ws = now - into
        if into < 0 then ws = now - into - p2 end
        local used, leased_until = 0, 0
        if value then
          local _, stored_ws, stored_count, stored_until
          if #value == 17 then
            _, stored_ws, stored_count = sunpack("<Bdd", value)
          else
            _, stored_ws, stored_count, stored_until = sunpack("<Bddd", value)
          end
          local x = (ws - stored_ws) / p2
          local later = floor(x)
          if x - later >= 0.5 then later = later + 1 end
          if later <= 0 then
            used = stored_count
            if stored_until and stored_until > now then leased_until = stored_until end
          end
        end
        local window_end = ws + p2
        local available = p1 - used
        s1[i], s2[i], s3[i] = ws, used, leased_until
        if cost <= available + UNIT_TOLERANCE and cost <= p1 then
          -- Admitted: the common path, with ceil_ms and whole_units written out.
          local counted = used + cost
          reset = 0
          if counted > 0 then
            local d = window_end - now
            if d <= 1e-6 then reset = 0 else reset = ceil(d - 1e-6) end
          end
          remaining = floor(available - cost + 1e-9)
          if remaining <= 0 then remaining = 0 elseif not (remaining < p1) then remaining = floor(p1) end
          code, retry = 0, 0
          s2[i] = counted
        elseif cost > p1 then
          code, remaining, retry, reset = 2, whole_units(available, p1), 0, 0
          if used > 0 then reset = ceil_ms(window_end - now) end
        else
          local reset_ms = 0
          if used > 0 then reset_ms = ceil_ms(window_end - now) end
          retry = ceil_ms(window_end - now)
          for step = 0, RETRY_CORRECTION_STEPS do
            local counted = 0
            if windows_between(ws, window_start_of(now + retry, p2), p2) <= 0 then
              counted = used
            end
            if counted + cost <= p1 + UNIT_TOLERANCE then break end
            if step == RETRY_CORRECTION_STEPS then
              if reset_ms > retry then retry = reset_ms end
              break
            end
            retry = retry + 1
          end
          -- Leases of this window may give units back before they end (lease-table.ts), and a
          -- lease ends with the window at the latest: ask again by the last lease's end, and
          -- at least every twentieth of the window, so units given back are not left unused.
          if leased_until > 0 then
            local back_by = ceil_ms(min(leased_until - now, p2 / 20))
            if back_by < retry then retry = back_by end
          end
          code, remaining, reset = 1, whole_units(available, p1), reset_ms
        end
      elseif algorithm == 3 then
        -- sliding-window.ts: state {windowStartMs, currentCount, previousCount}; p1 limit, p2
        -- windowMs. (window_start_of and windows_between written out.)
        local into = fmod(now, p2)
        local ws = now - into
        if into < 0 then ws = now - into - p2 end
        local curr, prev, leased_until = 0, 0, 0
        if value then
          local _, stored_ws, stored_curr, stored_prev, stored_until
          if #value == 25 then
            _, stored_ws, stored_curr, stored_prev = sunpack("<Bddd", value)
          else
            _, stored_ws, stored_curr, stored_prev, stored_until = sunpack("<Bdddd", value)
          end
          local x = (ws - stored_ws) / p2
          local later = floor(x)
          if x - later >= 0.5 then later = later + 1 end
          if later <= 0 then
            curr, prev = stored_curr, stored_prev
            if stored_until and stored_until > now then leased_until = stored_until end
          elseif later == 1 then
            prev = stored_curr
          end
        end
        local available = p1 - (curr + prev * (1 - (now - ws) / p2))
        s1[i], s2[i], s3[i], s4[i] = ws, curr, prev, leased_until
        if cost <= available + UNIT_TOLERANCE and cost <= p1 then
          -- Admitted: the common path, with ceil_ms and whole_units written out.
          local counted = curr + cost
          reset = 0
          local d
          if counted > 0 then
            d = ws + 2 * p2 - now
          elseif prev > 0 then
            d = ws + p2 - now
          end
          if d then
            if d <= 1e-6 then reset = 0 else reset = ceil(d - 1e-6) end
          end
          remaining = floor(available - cost + 1e-9)
          if remaining <= 0 then remaining = 0 elseif not (remaining < p1) then remaining = floor(p1) end
          code, retry = 0, 0
          s2[i] = counted
        else
          local reset_ms = 0
          if curr > 0 then
            reset_ms = ceil_ms(ws + 2 * p2 - now)
          elseif prev > 0 then
            reset_ms = ceil_ms(ws + p2 - now)
          end
          if cost > p1 then
            code, remaining, retry, reset = 2, whole_units(available, p1), 0, reset_ms
          else
            local room_at
            local room_in_current = p1 - cost - curr
            if room_in_current >= 0 then
              room_at = ws + p2 * (1 - room_in_current / prev)
            else
              room_at = (ws + p2) + p2 * (1 - (p1 - cost) / curr)
            end
            retry = ceil_ms(room_at - now)
            for step = 0, RETRY_CORRECTION_STEPS do
              local at = now + retry
              local start = window_start_of(at, p2)
              local later = windows_between(ws, start, p2)
              local c, p = 0, 0
              if later <= 0 then
                c, p = curr, prev
              elseif later == 1 then
                p = curr
              end
              if c + p * (1 - (at - start) / p2) + cost <= p1 + UNIT_TOLERANCE then break end
              if step == RETRY_CORRECTION_STEPS then
                if reset_ms > retry then retry = reset_ms end
                break
              end
              retry = retry + 1
            end
            -- As for a fixed window: leases may give units back before the window ends.
            if leased_until > 0 then
              local back_by = ceil_ms(min(leased_until - now, p2 / 20))
              if back_by < retry then retry = back_by end
            end
            code, remaining, reset = 1, whole_units(available, p1), reset_ms
          end
        end
      elseif algorithm == 5 then
        -- leaky-meter.ts: state {zeroRoomAtMs}; p1 burst, p2 drainPerSec.
        local at = now + math.abs(now) * 8 * (2 ^ -52) -- numeric.ts timeNoiseMs
        local room = p1
        local full_at = now - (p1 * 1000) / p2
        local zero_room_at = full_at
        if value then
          local _, stored = sunpack("<Bd", value)
          room = ((at - stored) * p2) / 1000
          if room <= 0 then room = 0 else room = min(room, p1) end
          if stored >= full_at then zero_room_at = stored end
        end
        local reset_ms = ceil_ms(((p1 - room) * 1000) / p2)
        s1[i] = zero_room_at
        if cost > p1 then
          code, remaining, retry, reset = 2, whole_units(room, p1), 0, reset_ms
        elseif cost <= room + UNIT_TOLERANCE then
          local left = 0
          if room > cost then left = room - cost end
          code, remaining, retry = 0, whole_units(left, p1), 0
          reset = ceil_ms(((p1 - left) * 1000) / p2)
          s1[i] = zero_room_at + (cost * 1000) / p2
        else
          retry = ceil_ms(zero_room_at + (cost * 1000) / p2 - at)
          for step = 0, RETRY_CORRECTION_STEPS do
            local then_ms = now + retry
            then_ms = then_ms + math.abs(then_ms) * 8 * (2 ^ -52)
            local room_then = ((then_ms - zero_room_at) * p2) / 1000
            if room_then <= 0 then room_then = 0 else room_then = min(room_then, p1) end
            if room_then + UNIT_TOLERANCE >= cost then break end
            if step == RETRY_CORRECTION_STEPS then
              if reset_ms > retry then retry = reset_ms end
              break
            end
            retry = retry + 1
          end
          code, remaining, reset = 1, whole_units(room, p1), reset_ms
        end
      elseif algorithm == 2 then
        if not step_sliding_log then
          -- sliding-log.ts: a sorted set.

          -- The state handed around is a table: at[], cost[], seq[] (live entries, oldest first), n,
          -- plus what writing it takes: dropped (how many stored entries expired), moved[] (indices
          -- whose instant moved back to now after the clock went back), old_member (a merged entry's
          -- previous member), next_seq, and foreign (the key holds another algorithm's string).
          local function sl_member(seq, c)
            return fmt("%012x:%.17g", seq, c)
          end

          local function sl_read(key, is_stale)
            local log = { at = {}, cost = {}, seq = {}, n = 0, dropped = 0, moved = {}, next_seq = 1 }
            if is_stale then
              log.foreign = true
              return log
            end
            local reply = pcall_("ZRANGE", key, 0, -1, "WITHSCORES")
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

          step_sliding_log = function(key, limit, w, is_stale)
            local live = sl_live(sl_read(key, is_stale), w)
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

          -- Writes the log and returns its lifetime (0: empty, deleted).
          write_log = function(key, log, w)
            if log.foreign then call("DEL", key) end
            if log.dropped > 0 then call("ZREMRANGEBYRANK", key, 0, log.dropped - 1) end
            if log.n == 0 then
              call("DEL", key)
              return 0
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
            local lifetime = log.at[log.n] + w - now
            call("PEXPIRE", key, ttl_of(lifetime))
            return lifetime
          end
        end
        local field = stored[i]
        code, remaining, retry, reset, s1[i] =
          step_sliding_log(log_keys[i], p1, p2, field and field ~= LOG_MARK)
      else
        return error_reply("unknown algorithm code " .. tostring(algorithm))
      end
      if code ~= 0 and check[4] then is_allowed = false end
      codes[i] = code
      r = r + 1
      reply[r] = pack("<Bddd", code, remaining, retry, reset)
    end
    if op == "l" then
      -- A lease (lease-table.ts): once the request is admitted, up to the wanted units more are
      -- charged now on every check, for one gateway alone to spend until the lease ends. Every
      -- check grants the same units (a local admission spends from every check): the least of
      -- the checks' grants, each at most half of what the check has left (so it shrinks to
      -- nothing near the limit), and the lease lives as long as spending a unit later is exact
      -- on every check:
      -- - fixed and sliding window: until the current window ends (a unit counted in this
      --   window and spent later in it is what the window counts anyway), and at most the
      --   units wanted in proportion to the window's time left; the state keeps the instant
      --   its last lease ends, so a rejection meanwhile says to retry by then (the lease may
      --   give units back) rather than at the window's end;
      -- - token bucket: the units are taken from the tokens and RESERVED: until the lease ends
      --   the capacity is short of them, so the bucket cannot refill into room the lease
      --   holds, and a burst can never exceed the capacity, whenever the units are spent. Two
      --   reservations at most: a new lease joins the later one and ends with it, unless that
      --   has under a quarter of the lifetime wanted left; then the two fold into one that
      --   ends with the later (the earlier is held longer than it needed: the capacity is short
      --   of more, for longer, never less) and the new lease takes the second place, whole;
      -- - sliding log and leaky meter: never.
      local grant, lifetime = head[5], head[6]
      local folds -- per check: the reservations fold if this lease is granted
      if not is_allowed then grant = 0 end
      for i = 1, count do
        if grant <= 0 then break end
        local check = parsed[i]
        local algorithm, p1, p2 = check[1], check[2], check[3]
        local room, life_i = 0, 0
        if codes[i] ~= 0 then
          room = 0
        elseif algorithm == 1 or algorithm == 3 then
          life_i = floor(s1[i] + p2 - now)
          if algorithm == 1 then
            room = p1 - s2[i]
          else
            room = p1 - (s2[i] + s3[i] * (1 - (now - s1[i]) / p2))
          end
          if life_i < head[6] then
            -- The window ends before the lifetime wanted: the units wanted shrink alike, so a
            -- lease late in a window does not hold what others need until the window's end.
            local scaled = floor((head[5] * life_i) / head[6] + UNIT_TOLERANCE)
            if scaled < grant then grant = scaled end
          end
        elseif algorithm == 4 then
          room, life_i = s1[i], lifetime
          local held = res and res[i]
          if held and held[3] > 0 and (held[4] - now) * 4 >= lifetime then
            life_i = floor(held[4] - now)
          elseif held and held[3] > 0 then
            folds = folds or {}
            folds[i] = true
          end
        end
        local units = floor(room / 2 + UNIT_TOLERANCE)
        if units < grant then grant = units end
        if life_i < lifetime then lifetime = life_i end
      end
      if not (grant >= 1 and lifetime >= 1) then grant, lifetime = 0, 0 end
      if grant > 0 then
        for i = 1, count do
          local algorithm = parsed[i][1]
          if algorithm == 1 or algorithm == 3 then
            s2[i] = s2[i] + grant
            if algorithm == 1 then
              if now + lifetime > s3[i] then s3[i] = now + lifetime end
            elseif now + lifetime > s4[i] then
              s4[i] = now + lifetime
            end
          elseif algorithm == 4 then
            s1[i] = s1[i] - grant
            res = res or {}
            local held = res[i]
            if not held then
              res[i] = { grant, now + lifetime, 0, 0 }
            elseif held[3] > 0 and folds and folds[i] and now + lifetime > held[4] then
              held[1], held[2], held[3], held[4] = held[1] + held[3], held[4], grant, now + lifetime
            elseif held[3] > 0 then
              -- Joins the later one (this lease ends no later: a window may have cut it short).
              held[3] = held[3] + grant
            elseif held[2] <= now + lifetime then
              held[3], held[4] = grant, now + lifetime
            else
              -- Ends before the one held (a window cut it short): it goes first.
              held[1], held[2], held[3], held[4] = grant, now + lifetime, held[1], held[2]
            end
          end
        end
      end
      r = r + 1
      reply[r] = pack("<dd", grant, lifetime)
    end
    -- layered.ts: on admission every check writes its stepped state, on rejection only the
    -- checks that rejected do, so a rejection consumes from none. One HSET for them all.
    if op ~= "p" then
      local nh, longest = 2, 0
      hs[2] = hkey
      for i = 1, count do
        if is_allowed or codes[i] ~= 0 then
          local check = parsed[i]
          local algorithm, p1, p2 = check[1], check[2], check[3]
          if algorithm == 2 then
            local lifetime = write_log(log_keys[i], s1[i], p2)
            if stored[i] ~= LOG_MARK then
              hs[nh + 1], hs[nh + 2] = check[5], LOG_MARK
              nh = nh + 2
              if lifetime > longest then longest = lifetime end
            end
          else
            local value, lifetime
            local held = algorithm == 4 and res and res[i]
            if held then
              value = pack("<Bdddddd", 4, s1[i], s2[i], held[1], held[2], held[3], held[4])
              local till = held[2]
              if held[4] > till then till = held[4] end
              lifetime = (till - now) + ((p1 - s1[i]) * 1000) / p2
            elseif algorithm == 4 then
              value, lifetime = pack("<Bdd", 4, s1[i], s2[i]), ((p1 - s1[i]) * 1000) / p2
            elseif algorithm == 1 then
              if s3[i] > now then
                value = pack("<Bddd", 1, s1[i], s2[i], s3[i])
              else
                value = pack("<Bdd", 1, s1[i], s2[i])
              end
              lifetime = s1[i] + p2 - now
            elseif algorithm == 3 then
              if s4[i] > now then
                value = pack("<Bdddd", 3, s1[i], s2[i], s3[i], s4[i])
              else
                value = pack("<Bddd", 3, s1[i], s2[i], s3[i])
              end
              lifetime = s1[i] + 2 * p2 - now
            else
              value, lifetime = pack("<Bd", 5, s1[i]), s1[i] + (p1 * 1000) / p2 - now
            end
            hs[nh + 1], hs[nh + 2] = check[5], value
            nh = nh + 2
            if lifetime > longest then longest = lifetime end
          end
        end
      end
      if nh > 2 then write_fields(hkey, nh, deadline, longest, head[2], foreign) end
    end
  end
  k = k + used
  a = a + 1 + count
end

-- The call's Redis TIME in whole microseconds (0 when no decision asked for it): the time of
-- every decision that used it, and with each decision's place in the call, the traffic record's
-- order.
reply[r + 1] = pack("<d", redis_now_us or 0)
return concat(reply, "", 1, r + 1)
end
`;

/**
 * The first 12 hex digits of the SHA-1 of `REDIS_DECIDE_BODY`: the version in the library's and
 * the function's names, so two releases' libraries live side by side during a rolling deploy. A
 * unit test recomputes it from the text, so an edit to the script without this constant fails.
 */
export const REDIS_DECIDE_VERSION = "9646f457a66c";

/** The function the store calls with FCALL. */
export const REDIS_DECIDE_FUNCTION = `limitplane_decide_${REDIS_DECIDE_VERSION}`;

/** The library's name (what `FUNCTION LIST LIBRARYNAME` finds). */
export const REDIS_DECIDE_LIBRARY_NAME = `limitplane_${REDIS_DECIDE_VERSION}`;

/** The library `FUNCTION LOAD` takes: the body, registering `decide` under the function's name. */
export const REDIS_DECIDE_LIBRARY = `#!lua name=${REDIS_DECIDE_LIBRARY_NAME}
${REDIS_DECIDE_BODY}redis.register_function("${REDIS_DECIDE_FUNCTION}", decide)
`;

/** The EVAL form: the body, then the call. */
export const REDIS_DECIDE_LUA = `${REDIS_DECIDE_BODY}return decide(KEYS, ARGV)
`;

/**
 * SHA-1 of `REDIS_DECIDE_LUA`, the name Redis caches the EVAL form under (EVALSHA). A unit test
 * recomputes it from the text, so an edit to the script without this constant fails the build.
 */
export const REDIS_DECIDE_SHA1 = "610140d09a8293eb51a11473cd52e5ee3c181c98";
