-- wrk script for the "detail" scenario: GET /employees/{n}?details=titles&details=salaries
-- for a random existing employee number n in [10001, 10000 + employees].
--
--   wrk -t2 -c16 -d15s --latency -s Benchmarks/detail.lua http://127.0.0.1:PORT -- EMPLOYEES
--
-- EMPLOYEES (default 300024) is the number of generated employees; `spout generate` numbers
-- them from 10001 without gaps, so every request hits an employee (a 404 would count as an
-- error). done() prints one line `WRK_JSON {...}` with the figures Benchmarks/run records:
-- requests, seconds, requests/s, latency percentiles in microseconds, errors by kind.

local first = 10001
local last = 10000 + 300024
local threads = {}
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("thread_number", counter)
    table.insert(threads, thread)
end

function init(args)
    if args[1] ~= nil then
        last = first + tonumber(args[1]) - 1
    end
    -- Each thread has its own Lua state: seed each differently, but reproducibly per run.
    math.randomseed(os.time() * 1000 + (thread_number or 0))
end

function request()
    local n = math.random(first, last)
    return wrk.format("GET", "/employees/" .. n .. "?details=titles&details=salaries")
end

function done(summary, latency, requests)
    local seconds = summary.duration / 1e6
    local e = summary.errors
    local errors = e.connect + e.read + e.write + e.status + e.timeout
    io.write(string.format(
        'WRK_JSON {"requests": %d, "seconds": %.3f, "requests_per_second": %.1f, "bytes": %d, '
            .. '"latency_us": {"mean": %.1f, "p50": %d, "p90": %d, "p99": %d, "max": %d}, '
            .. '"errors": {"total": %d, "connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}}\n',
        summary.requests, seconds, summary.requests / seconds, summary.bytes,
        latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
        errors, e.connect, e.read, e.write, e.status, e.timeout))
end
