// Drives svc with the official C# MCP client: lists the tools, makes the calls named in a JSON
// file, and prints what the client saw as one JSON document (a JSON-RPC error as
// `protocolError`). Used by tests/interop_test.ts.
// A call is {"tool", "arguments"} or {"read": "<uri>"} (a resource; "<link>" reads the first
// resource_link of the results before it); resources and templates are listed too.
// The file is the array of calls, or {"calls": [...], "answers": [<ElicitResult>, ...]}: then the
// client speaks 2025-11-25, declares form elicitation, answers each elicitation/create with the next
// of those results and reports each request it got as `elicitations`. An object may instead hold
// "prompts": [{"name", "arguments"}] and "completions": [{"prompt", "argument", "value"}]: the
// client lists the prompts, gets and completes those, and reports them as `prompts`,
// `promptResults` and `completionResults`.
// Usage: CsharpClient <calls.json> <server command> [server arguments...]
using System.Text.Json;
using System.Text.Json.Nodes;
using ModelContextProtocol;
using ModelContextProtocol.Client;
using ModelContextProtocol.Protocol;

var file = JsonNode.Parse(File.ReadAllText(args[0]))!;
var calls = file is JsonArray list ? list : file["calls"]!.AsArray();
var answers = file is JsonObject && file["answers"] is JsonArray given ? given : null;
var answered = 0;
var elicitations = new JsonArray();
var options = new McpClientOptions();
if (answers is not null)
{
    options.ProtocolVersion = "2025-11-25";
    options.Capabilities = new ClientCapabilities
    {
        Elicitation = new ElicitationCapability { Form = new FormElicitationCapability() },
    };
    options.Handlers = new McpClientHandlers
    {
        ElicitationHandler = (request, _) =>
        {
            elicitations.Add(JsonSerializer.SerializeToNode(request, McpJsonUtilities.DefaultOptions));
            var answer = answers[Math.Min(answered++, answers.Count - 1)]!;
            return ValueTask.FromResult(
                JsonSerializer.Deserialize<ElicitResult>(answer.ToJsonString(), McpJsonUtilities.DefaultOptions)!);
        },
    };
}
var transport = new StdioClientTransport(new StdioClientTransportOptions
{
    Name = "svc",
    Command = args[1],
    Arguments = args[2..],
});
await using var client = await McpClient.CreateAsync(transport, options);
var tools = new JsonArray();
foreach (var tool in await client.ListToolsAsync())
{
    tools.Add(new JsonObject
    {
        ["name"] = tool.Name,
        ["inputSchema"] = JsonNode.Parse(tool.JsonSchema.GetRawText()),
    });
}
var resources = new JsonArray();
foreach (var resource in await client.ListResourcesAsync()) resources.Add(resource.Uri);
var templates = new JsonArray();
foreach (var template in await client.ListResourceTemplatesAsync()) templates.Add(template.UriTemplate);
var results = new JsonArray();
foreach (var call in calls)
{
    // {"read": "<uri>"} reads a resource; "<link>" as the uri reads the first resource_link of the
    // results so far.
    if (call!["read"] is JsonNode read)
    {
        var uri = read.GetValue<string>();
        if (uri == "<link>")
        {
            uri = results.SelectMany(r => r?["content"]?.AsArray() ?? new JsonArray())
                .First(c => c?["type"]?.GetValue<string>() == "resource_link")!["uri"]!.GetValue<string>();
        }
        try
        {
            var contents = await client.ReadResourceAsync(uri);
            results.Add(JsonSerializer.SerializeToNode(contents, McpJsonUtilities.DefaultOptions));
        }
        catch (McpProtocolException error)
        {
            results.Add(new JsonObject { ["protocolError"] = error.Message });
        }
        continue;
    }
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
var prompts = new JsonArray();
var promptResults = new JsonArray();
var completionResults = new JsonArray();
if (file is JsonObject && file["prompts"] is JsonArray wanted)
{
    foreach (var prompt in await client.ListPromptsAsync())
    {
        prompts.Add(JsonSerializer.SerializeToNode(prompt.ProtocolPrompt, McpJsonUtilities.DefaultOptions));
    }
    foreach (var get in wanted)
    {
        var arguments = get!["arguments"]!.AsObject().ToDictionary(p => p.Key, p => (object?)p.Value!.GetValue<string>());
        try
        {
            var result = await client.GetPromptAsync(get["name"]!.GetValue<string>(), arguments);
            promptResults.Add(JsonSerializer.SerializeToNode(result, McpJsonUtilities.DefaultOptions));
        }
        catch (McpProtocolException error)
        {
            promptResults.Add(new JsonObject { ["protocolError"] = error.Message });
        }
    }
    foreach (var completion in file["completions"]!.AsArray())
    {
        var reference = new PromptReference { Name = completion!["prompt"]!.GetValue<string>() };
        var result = await client.CompleteAsync(reference, completion["argument"]!.GetValue<string>(), completion["value"]!.GetValue<string>());
        completionResults.Add(JsonSerializer.SerializeToNode(result, McpJsonUtilities.DefaultOptions));
    }
}
Console.WriteLine(new JsonObject
{
    ["tools"] = tools,
    ["resources"] = resources,
    ["resourceTemplates"] = templates,
    ["results"] = results,
    ["elicitations"] = elicitations,
    ["prompts"] = prompts,
    ["promptResults"] = promptResults,
    ["completionResults"] = completionResults,
}.ToJsonString());
