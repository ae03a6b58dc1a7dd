/**
 * A few bytes of JSON cannot hold a worker for minutes: `_RequestedProperties` is bounded in names
 * (`MaxRequestedProperties`) and in wildcard names (`MaxRequestedPropertyWildcards`), and every array
 * in an argument in items (`MaxArgumentItems`). A call over a limit is refused with 400 before any
 * worker runs it, naming the limit and its setting; a call within the limits still runs.
 */
import assert from "node:assert/strict";
import { fixtureConfig, post, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

Deno.test("/call refuses arguments that ask for more work than the limits allow", async () => {
  const config = {
    ...fixtureConfig({ MaxRequestedProperties: 10, MaxArgumentItems: 100 }),
    McpServer: { RunspacePool: LIGHT_POOL },
  };
  await using svc = await startHttpSvc({ config });
  const call = (tool: string, args: Record<string, unknown>) =>
    post(`${svc.url}/call`, { tool, arguments: args });

  const names = Array.from({ length: 11 }, (_, i) => `Name${i}`);
  const tooMany = await call("get_date_date_and_format", { _RequestedProperties: names });
  assert.equal(tooMany.status, 400, JSON.stringify(tooMany.body));
  assert.match(
    JSON.stringify(tooMany.body),
    /11 given, at most 10 allowed \(ShellConfiguration:MaxRequestedProperties\)/,
  );

  // The default wildcard limit (8) applies where the file does not set it.
  const wildcards = ["*a", "b*", "c?", "[de]f", "*g*", "h*", "*i", "j*", "k*"];
  const tooWild = await call("get_date_date_and_format", { _RequestedProperties: wildcards });
  assert.equal(tooWild.status, 400);
  assert.match(
    JSON.stringify(tooWild.body),
    /9 given, at most 8 allowed \(ShellConfiguration:MaxRequestedPropertyWildcards\)/,
  );

  const items = await call("write_output", { InputObject: Array.from({ length: 101 }, () => 1) });
  assert.equal(items.status, 400);
  assert.match(
    JSON.stringify(items.body),
    /argument 'InputObject'.*101 items, at most 100 allowed \(ShellConfiguration:MaxArgumentItems\)/,
  );
  // An array nested in an object argument counts too.
  const nested = await call("write_output", {
    InputObject: [{ list: Array.from({ length: 101 }, (_, i) => i) }],
  });
  assert.equal(nested.status, 400);
  assert.match(JSON.stringify(nested.body), /ShellConfiguration:MaxArgumentItems/);

  const within = await call("write_output", { InputObject: Array.from({ length: 100 }, () => 7) });
  assert.equal(within.status, 200, JSON.stringify(within.body));
  const shaped = await call("get_date_date_and_format", {
    _RequestedProperties: ["Year", "Month", "*Day"],
  });
  assert.equal(shaped.status, 200, JSON.stringify(shaped.body));
  assert.match(JSON.stringify(shaped.body), /Year/);
});
