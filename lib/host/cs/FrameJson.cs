// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): requests parsed into the
// shapes PowerShell's own literals have.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Text.Json;

namespace Svc.Host
{
    /// <summary>Parses the frames of docs/worker-protocol.md.</summary>
    public static class FrameJson
    {
        // As deep as ConvertFrom-Json goes by default.
        private static readonly JsonDocumentOptions Options = new JsonDocumentOptions { MaxDepth = 1024 };

        /// <summary>
        /// The frame as a case-insensitive <see cref="Hashtable"/> (what <c>@{}</c> makes), its arrays as
        /// <c>object[]</c>, integers as <c>int</c> when they fit, else <c>long</c>, other numbers as
        /// <c>double</c>. Strings stay strings: ConvertFrom-Json in 7.4 turns ISO-8601-looking ones into
        /// DateTime, which would change the arguments a user passes. Null when the frame is not an object;
        /// throws <see cref="JsonException"/> when it is not JSON.
        /// </summary>
        public static Hashtable ParseObject(string line)
        {
            using (JsonDocument document = JsonDocument.Parse(line, Options))
            {
                if (document.RootElement.ValueKind != JsonValueKind.Object) return null;
                return (Hashtable)ToValue(document.RootElement);
            }
        }

        private static object ToValue(JsonElement element)
        {
            switch (element.ValueKind)
            {
                case JsonValueKind.Object:
                    Hashtable table = new Hashtable(StringComparer.OrdinalIgnoreCase);
                    foreach (JsonProperty property in element.EnumerateObject()) table[property.Name] = ToValue(property.Value);
                    return table;
                case JsonValueKind.Array:
                    List<object> items = new List<object>(element.GetArrayLength());
                    foreach (JsonElement item in element.EnumerateArray()) items.Add(ToValue(item));
                    return items.ToArray();
                case JsonValueKind.String:
                    return element.GetString();
                case JsonValueKind.Number:
                    long number;
                    if (element.TryGetInt64(out number))
                    {
                        if (number >= int.MinValue && number <= int.MaxValue) return (int)number;
                        return number;
                    }
                    return element.GetDouble();
                case JsonValueKind.True:
                    return true;
                case JsonValueKind.False:
                    return false;
                default:
                    return null;
            }
        }
    }
}
