// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): text and JSON cut to a size in
// bytes, keeping a string's head and tail with a marker that counts what went. The same cut svc makes
// (lib/result_fit.ts), made here so that a call's output past what svc keeps never leaves the worker.
using System;
using System.Collections;
using System.Collections.Specialized;
using System.Text;
using System.Text.Json;

namespace Svc.Host
{
    /// <summary>Cuts strings and JSON values to about a size, as svc's result fitting does.</summary>
    public static class TextCut
    {
        /// <summary>Strings are never cut below this many characters, head and tail together (as in svc).</summary>
        public const int ShortestCut = 64;

        // As deep as ConvertTo-Json goes (-Depth 100), with room.
        private static readonly JsonDocumentOptions Options = new JsonDocumentOptions { MaxDepth = 256 };

        /// <summary>UTF-8 bytes of <paramref name="text"/> encoded as a JSON string.</summary>
        public static long JsonBytes(string text)
        {
            return Encoding.UTF8.GetByteCount(JsonValue.Serialize(text));
        }

        /// <summary>
        /// <paramref name="text"/> as it is when its JSON fits in <paramref name="budget"/> bytes, else its
        /// head and tail with <c>\n…[svc: N characters cut]…\n</c> between, N counting every UTF-16 unit
        /// left out, the whole within about <paramref name="budget"/> bytes of JSON.
        /// </summary>
        public static string CutMiddle(string text, long budget)
        {
            // A JSON string takes at least a byte per UTF-16 unit and two quotes: a longer one cannot fit,
            // and measuring it would encode all of it.
            if (text.Length + 2 <= budget && JsonBytes(text) <= budget) return text;
            // Escapes and multi-byte characters make bytes outnumber characters; the ratio is read from
            // the part that may be kept, not from the whole (which may be hundreds of megabytes).
            int sample = (int)Math.Min(text.Length, Math.Max(budget, 4096));
            string probe = SafeSlice(text, 0, sample / 2) + SafeSlice(text, text.Length - sample / 2, text.Length);
            double ratio = Math.Max(1.0, (double)JsonBytes(probe) / Math.Max(1, probe.Length));
            // Always fewer than all: the text does not fit, so something must go.
            int keep = (int)Math.Min(text.Length - 1, Math.Max(ShortestCut, Math.Floor((budget - 60) / ratio)));
            for (;;)
            {
                int head = (keep + 1) / 2;
                string cut = SafeSlice(text, 0, head) + "\n\u2026[svc: " + (text.Length - keep) + " characters cut]\u2026\n" +
                    SafeSlice(text, text.Length - (keep - head), text.Length);
                long over = JsonBytes(cut) - budget;
                if (over <= 0 || keep <= ShortestCut) return cut;
                keep = Math.Max(ShortestCut, keep - (int)Math.Ceiling(over / ratio) - 8);
            }
        }

        /// <summary>
        /// One encoded JSON value shortened to about <paramref name="budget"/> bytes: every string longer
        /// than a limit is cut (the limit halving until the value fits); a value that still does not fit
        /// becomes its JSON text, cut the same way, as a string.
        /// </summary>
        public static string ShortenJson(string json, long budget)
        {
            object tree;
            using (JsonDocument document = JsonDocument.Parse(json, Options)) tree = ToTree(document.RootElement);
            for (long limit = Math.Max(ShortestCut, budget / 2); limit >= ShortestCut; limit >>= 1)
            {
                string cut = JsonValue.Serialize(CutStrings(tree, limit));
                if (Encoding.UTF8.GetByteCount(cut) <= budget) return cut;
            }
            return JsonValue.Serialize(CutMiddle(json, budget));
        }

        /// <summary>
        /// A copy of a tree of dictionaries, lists and strings (what frames are built from) with every
        /// string longer than <paramref name="limit"/> bytes of JSON cut by <see cref="CutMiddle"/>.
        /// </summary>
        public static object CutStrings(object value, long limit)
        {
            string text = value as string;
            if (text != null) return CutMiddle(text, limit);
            IDictionary table = value as IDictionary;
            if (table != null)
            {
                OrderedDictionary copy = new OrderedDictionary();
                foreach (DictionaryEntry entry in table) copy[entry.Key] = CutStrings(entry.Value, limit);
                return copy;
            }
            if (value is RawJson) return value;
            IList list = value as IList;
            if (list != null)
            {
                ArrayList copy = new ArrayList(list.Count);
                foreach (object item in list) copy.Add(CutStrings(item, limit));
                return copy;
            }
            return value;
        }

        // Strings stay whole (cut later, per limit); numbers, booleans and null keep their JSON text.
        private static object ToTree(JsonElement element)
        {
            switch (element.ValueKind)
            {
                case JsonValueKind.Object:
                    OrderedDictionary table = new OrderedDictionary();
                    foreach (JsonProperty property in element.EnumerateObject()) table[property.Name] = ToTree(property.Value);
                    return table;
                case JsonValueKind.Array:
                    ArrayList items = new ArrayList(element.GetArrayLength());
                    foreach (JsonElement item in element.EnumerateArray()) items.Add(ToTree(item));
                    return items;
                case JsonValueKind.String:
                    return element.GetString();
                default:
                    return new RawJson(element.GetRawText());
            }
        }

        /// <summary>Slices without splitting a surrogate pair.</summary>
        private static string SafeSlice(string text, int start, int end)
        {
            start = Math.Max(0, Math.Min(start, text.Length));
            end = Math.Max(start, Math.Min(end, text.Length));
            while (start > 0 && start < text.Length && char.IsLowSurrogate(text[start])) start++;
            while (end > start && end < text.Length && char.IsLowSurrogate(text[end])) end--;
            return text.Substring(start, end - start);
        }
    }
}
