-- wrk script: POST /api/v1/voice/calls with a unique Idempotency-Key per
-- request. Reads KEY, BIZ, AGENT from the environment.
local key = os.getenv("KEY")
local biz = os.getenv("BIZ")
local agent = os.getenv("AGENT")
local counter = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function request()
  counter = counter + 1
  local body = string.format('{"businessId":"%s","agentId":"%s","toNumber":"+1556%07d"}', biz, agent, counter)
  return wrk.format("POST", "/api/v1/voice/calls", {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = string.format("bench-call-%d-%d", thread_id or 0, counter),
  }, body)
end
