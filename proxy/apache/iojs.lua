-- blackbox-capture: first-party reverse proxy for the device-intelligence scripts, the mod_lua
-- part of the Apache recipe (iojs.conf runs it; a2enmod lua). Apache's mod_headers can drop a
-- header only by name, so a header a client or the collector invents tomorrow would cross;
-- these two hooks keep the contract's lists instead (docs/proxy.md, "The contract in one
-- table"), both ways, and drop every other name.

-- Out: the browser's headers that may reach the collector as sent, and those the front writes
-- itself (iojs.conf: Host is mod_proxy's own, Cookie is cut to the vendor's, X-Forwarded-*
-- set from the connection), which mod_headers overwrites whatever the client sent.
local FORWARDED_REQUEST_HEADERS = { 'user-agent', 'accept-language', 'referer', 'accept', 'if-none-match', 'if-modified-since', 'content-type' }
local FRONT_REQUEST_HEADERS = { 'host', 'cookie', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto' }
-- Back: the collector's headers that may reach the shopper as sent, and Set-Cookie, which
-- mod_headers then renames into the vendor's namespace (its own Content-Security-Policy and
-- the dynamic script's caching are set after this filter runs).
local RETURNED_RESPONSE_HEADERS = { 'content-type', 'cache-control', 'etag', 'last-modified', 'expires', 'vary' }
local REWRITTEN_RESPONSE_HEADERS = { 'set-cookie' }

local function set_of(...)
  local names = {}
  for _, list in ipairs({ ... }) do
    for _, name in ipairs(list) do names[name] = true end
  end
  return names
end
local REQUEST = set_of(FORWARDED_REQUEST_HEADERS, FRONT_REQUEST_HEADERS)
local ANSWER = set_of(RETURNED_RESPONSE_HEADERS, REWRITTEN_RESPONSE_HEADERS)

-- Unsets every header of `headers` (an Apache table; `copy` is it as a Lua table) not in `keep`.
local function keep_only(headers, copy, keep)
  for name in pairs(copy) do
    if not keep[string.lower(name)] then headers[name] = nil end
  end
end

-- LuaHookFixups: before mod_proxy copies the request's headers for the collector.
function request_headers(r)
  keep_only(r.headers_in, r:headers_in_table(), REQUEST)
  return apache2.DECLINED
end

-- LuaOutputFilter: runs once, before the answer's headers are sent, and returns without
-- yielding, so the filter steps aside and the body passes on untouched. The headers of a
-- redirect or an error are in the second table.
function answer_headers(r)
  keep_only(r.headers_out, r:headers_out_table(), ANSWER)
  keep_only(r.err_headers_out, r:err_headers_out_table(), ANSWER)
end
