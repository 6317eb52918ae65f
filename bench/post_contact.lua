-- wrk script: POST /api/v1/contacts with a unique mobile and Idempotency-Key
-- per request. Reads KEY, BIZ, CAT from the environment, and RUN (0-9,
-- default 0): runs against one business with different RUNs never repeat a
-- key or a mobile (a repeated key would be a replay, not a create).
local key = os.getenv("KEY")
local run = tonumber(os.getenv("RUN") or "0")
local biz = os.getenv("BIZ")
local cat = os.getenv("CAT")
local counter = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function request()
  counter = counter + 1
  local mobile = string.format("+1%03d%07d", 200 + run * 10 + (thread_id or 0), counter)
  local body = string.format('{"businessId":"%s","name":"Bench %d","mobile":"%s","categoryIds":["%s"]}', biz, counter, mobile, cat)
  return wrk.format("POST", "/api/v1/contacts", {
    ["Authorization"] = "Bearer " .. key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = string.format("bench-%d-%d-%s", thread_id or 0, counter, mobile),
  }, body)
end
