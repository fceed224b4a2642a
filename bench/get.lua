-- wrk script: GET /v1/nodes/{name} spread over the 10,000 names of `serve --sim 10000`
-- (racks r01..r1250 of 8 nodes, rNNnMM). TOKEN comes from the environment.
-- Optional env (bench/ironic_lifecycle.sh): RACKS (number of racks, default 1250);
-- HDR_NAME/HDR_VALUE: one more request header (Ironic's X-OpenStack-Ironic-API-Version);
-- LIST_PATH: request this path every time instead (a list, e.g. /v1/nodes?limit=1000).
local token = os.getenv("TOKEN") or ""
local racks = tonumber(os.getenv("RACKS") or "1250")
local list = os.getenv("LIST_PATH")
if list == "" then list = nil end
local hdr = { ["Authorization"] = "Bearer " .. token }
if (os.getenv("HDR_NAME") or "") ~= "" then hdr[os.getenv("HDR_NAME")] = os.getenv("HDR_VALUE") or "" end
function init(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000) end
request = function()
	if list then return wrk.format("GET", list, hdr) end
	local path = string.format("/v1/nodes/r%02dn%02d", math.random(1, racks), math.random(1, 8))
	return wrk.format("GET", path, hdr)
end
