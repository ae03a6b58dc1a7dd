// Drives svc with the official C# MCP client: lists the tools, makes the calls named in a JSON
// file, and prints what the client saw as one JSON document (a JSON-RPC error as
// `protocolError`). Used by tests/interop_test.ts.
// Usage: CsharpClient <calls.json> <server command> [server arguments...]
using System.Text.Json;
using System.Text.Json.Nodes;
using ModelContextProtocol;
using ModelContextProtocol.Client;

var calls = JsonNode.Parse(File.ReadAllText(args[0]))!.AsArray();
var transport = new StdioClientTransport(new StdioClientTransportOptions
{
    Name = "svc",
    Command = args[1],
    Arguments = args[2..],
});
await using var client = await McpClient.CreateAsync(transport);
var tools = new JsonArray();
foreach (var tool in await client.ListToolsAsync())
{
    tools.Add(new JsonObject
    {
        ["name"] = tool.Name,
        ["inputSchema"] = JsonNode.Parse(tool.JsonSchema.GetRawText()),
    });
}
var results = new JsonArray();
foreach (var call in calls)
{
    var arguments = call!["arguments"]!.AsObject()
        .ToDictionary(p => p.Key, p => (object?)JsonSerializer.SerializeToElement(p.Value, McpJsonUtilities.DefaultOptions));
    try
    {
        var result = await client.CallToolAsync(call["tool"]!.GetValue<string>(), arguments);
        results.Add(JsonSerializer.SerializeToNode(result, McpJsonUtilities.DefaultOptions));
    }
    catch (McpProtocolException error)
    {
        results.Add(new JsonObject { ["protocolError"] = error.Message });
    }
}
Console.WriteLine(new JsonObject { ["tools"] = tools, ["results"] = results }.ToJsonString());
