/**
 * Writes appsettings.schema.json from the zod schema of lib/config_schema.ts (`deno task schema`).
 * tests/config_test.ts fails when the committed file and the schema drift apart.
 */
import { configJsonSchema } from "../lib/config_schema.ts";

await Deno.writeTextFile(
  new URL("../appsettings.schema.json", import.meta.url),
  JSON.stringify(configJsonSchema(), null, 2) + "\n",
);
