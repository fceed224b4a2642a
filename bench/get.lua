-- wrk script: GET /v1/nodes/{name} spread over the 10,000 names of `serve --sim 10000`
-- (racks r01..r1250 of 8 nodes, rNNnMM). TOKEN comes from the environment.
local token = os.getenv("TOKEN") or ""
local racks = tonumber(os.getenv("RACKS") or "1250")
local hdr = { ["Authorization"] = "Bearer " .. token }
function init(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000) end
request = function()
	local path = string.format("/v1/nodes/r%02dn%02d", math.random(1, racks), math.random(1, 8))
	return wrk.format("GET", path, hdr)
end
