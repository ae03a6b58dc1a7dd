// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): one call's output as the JSON
// array the response carries (protocol §4.4). Items are projected and encoded in order while the array
// stays within the call's outputBytes; from the first that does not fit, items are only counted. The
// invocation adds items as the command writes them, on its pipeline thread, so it knows the moment the
// output is full and can stop the command there; an item whose projection needs a format lookup
// waits for the command's end, since the lookup runs a pipeline in the busy worker runspace.
using System;
using System.Collections.Specialized;
using System.IO;
using System.Management.Automation;
using System.Text;
using Microsoft.PowerShell.Commands;

namespace Svc.Host
{
    /// <summary>The output array of one call, within its limits.</summary>
    public sealed class OutputBudget
    {
        private readonly StringBuilder _json = new StringBuilder("[");
        private readonly CallLimits _limits;
        private readonly OutputProjection.Pass _projection;
        private readonly JsonObject.ConvertToJsonContext _context;
        private long _bytes = 2;
        private int _kept;
        private readonly System.Collections.ArrayList _media = new System.Collections.ArrayList();

        /// <summary>
        /// <paramref name="limits"/> null: every item is kept. <paramref name="projection"/> null: items
        /// are encoded whole. <paramref name="depth"/> is ConvertTo-Json's.
        /// </summary>
        public OutputBudget(CallLimits limits, OutputProjection.Pass projection, int depth)
        {
            _limits = limits;
            _projection = projection;
            _context = new JsonObject.ConvertToJsonContext(depth, true, true);
        }

        /// <summary>True once an item did not fit: every later one is only counted.</summary>
        public bool Full { get; private set; }

        /// <summary>Items added, kept or counted.</summary>
        public int Items { get; private set; }

        /// <summary>Bytes of the array so far; once <see cref="Full"/>, a lower bound of the whole output's.</summary>
        public long Bytes { get { return _bytes; } }

        /// <summary>True when the first item alone did not fit and was kept shortened.</summary>
        public bool ShortenedFirst { get; private set; }

        /// <summary>The indices of the kept items that are media items (<see cref="MediaItem"/>).</summary>
        public System.Collections.ArrayList Media { get { return _media; } }

        /// <summary>
        /// Adds the next item: kept projected and encoded while it fits, else counted. False, with the
        /// item not added, when its projection needs a format lookup and <paramref name="mayLookUp"/> is
        /// false. Reads properties and type-data script properties, which are written for code without
        /// strict mode.
        /// </summary>
        public bool TryAdd(object item, bool mayLookUp)
        {
            if (Full)
            {
                Count(item);
                return true;
            }
            string text = _limits != null && item != null ? PSObject.AsPSObject(item).BaseObject as string : null;
            if (text != null && text.Length + 2 > _limits.OutputBytes)
            {
                // A JSON string takes at least a byte per UTF-16 unit: this one cannot fit, so it is not
                // encoded to find out by how much.
                Overflow(_bytes + text.Length + 2 + (_kept > 0 ? 1 : 0), () => JsonValue.Serialize(TextCut.CutMiddle(text, _limits.FirstItemBytes)));
                return true;
            }
            long mediaBytes = _limits != null ? MediaItem.EncodedBytes(item) : 0;
            if (mediaBytes > 0 && _bytes + mediaBytes + (_kept > 0 ? 1 : 0) > _limits.OutputBytes)
            {
                // Known too large from its length: never encoded, as a long string is not.
                Overflow(_bytes + mediaBytes + (_kept > 0 ? 1 : 0), () => MediaItem.TooLarge(mediaBytes));
                return true;
            }
            string encoded = MediaItem.Encode(item);
            bool media = encoded != null;
            if (!media)
            {
                object projected = item;
                if (_projection == null) projected = WithPaths(item);
                else if (!_projection.TryProject(item, mayLookUp, out projected)) return false;
                encoded = Encode(projected, in _context);
            }
            long size = Encoding.UTF8.GetByteCount(encoded) + (_kept > 0 ? 1 : 0);
            if (_limits != null && _bytes + size > _limits.OutputBytes)
            {
                Overflow(_bytes + size, () => media ? MediaItem.TooLarge(size) : TextCut.ShortenJson(encoded, _limits.FirstItemBytes));
                return true;
            }
            _bytes += size;
            Items++;
            if (media) _media.Add(_kept);
            if (_kept++ > 0) _json.Append(',');
            _json.Append(encoded);
            return true;
        }

        /// <summary>Counts <paramref name="items"/> let go of unencoded, which take at least <paramref name="bytes"/>.</summary>
        public void Dropped(int items, long bytes)
        {
            if (items == 0) return;
            Full = true;
            Items += items;
            _bytes += bytes;
        }

        /// <summary>The array's JSON; call once, after the last item.</summary>
        public string ToJson()
        {
            return _json.Append(']').ToString();
        }

        /// <summary>
        /// What an item takes at least as JSON, counted without encoding it: a string its length, quotes
        /// and comma; anything else two bytes.
        /// </summary>
        public static long LowerBound(object item)
        {
            string text = item != null ? PSObject.AsPSObject(item).BaseObject as string : null;
            return text != null ? text.Length + 3 : 2;
        }

        private void Count(object item)
        {
            Items++;
            _bytes += LowerBound(item);
        }

        // The item did not fit and the array is `bytes` long with it. When nothing was kept yet, it is
        // kept shortened.
        private void Overflow(long bytes, Func<string> shortened)
        {
            Full = true;
            Items++;
            _bytes = bytes;
            if (_kept > 0) return;
            _json.Append(shortened());
            ShortenedFirst = true;
        }

        /// <summary>
        /// An item kept whole (<c>_AllProperties</c>) as its properties, with the provider objects among
        /// their values named rather than encoded: a file or folder by its path, a drive or provider by
        /// its name. A FileInfo's <c>Directory</c> (whose <c>Parent</c> and <c>Root</c> are folders
        /// again) and <c>PSDrive</c> (whose provider lists every drive) were each encoded whole to
        /// SerializationDepth: one FileInfo came to 2.1 MB, kept only as a shortened string. An item
        /// without such values is unchanged.
        /// </summary>
        private static object WithPaths(object item)
        {
            if (item == null) return null;
            PSObject wrapped = PSObject.AsPSObject(item);
            if (wrapped.BaseObject is string || wrapped.BaseObject.GetType().IsPrimitive) return item;
            OrderedDictionary all = new OrderedDictionary(StringComparer.OrdinalIgnoreCase);
            bool named = false;
            foreach (PSPropertyInfo property in wrapped.Properties)
            {
                object value;
                try { value = property.Value; } catch (Exception) { value = null; }
                string name = NameOf(value is PSObject inner ? inner.BaseObject : value);
                named |= name != null;
                all[property.Name] = name ?? value;
            }
            return named ? all : item;
        }

        /// <summary>The path or name that stands for a provider object, or null for any other value.</summary>
        private static string NameOf(object value)
        {
            if (value is FileSystemInfo file) return file.FullName;
            if (value is PSDriveInfo drive) return drive.Name;
            if (value is ProviderInfo provider) return provider.Name;
            return null;
        }

        private static string Encode(object item, in JsonObject.ConvertToJsonContext context)
        {
            if (item == null) return "null";
            try
            {
                return JsonObject.ConvertToJson(item, in context) ?? "null";
            }
            catch (Exception)
            {
                string text;
                try { text = item.ToString(); } catch (Exception) { text = PSObject.AsPSObject(item).BaseObject.GetType().FullName; }
                return JsonValue.Serialize(text);
            }
        }
    }
}
