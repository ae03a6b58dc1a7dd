// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the output items svc sends
// as MCP content other than JSON text (protocol §4.4, `media`). A byte array goes as base64 for svc to
// tell its media type; an object typed svc.EmbeddedResource goes as the resource it describes. Both
// skip projection: their properties (a byte array's Length, an object's display set) are not what
// they carry.
using System;
using System.Collections.Specialized;
using System.Management.Automation;

namespace Svc.Host
{
    /// <summary>Recognises and encodes media items.</summary>
    public static class MediaItem
    {
        /// <summary>The type name a command gives an object to have it sent as an embedded resource.</summary>
        public const string ResourceTypeName = "svc.EmbeddedResource";

        /// <summary>
        /// The item as a media item's JSON, or null for an ordinary output item: <c>{"bytes"}</c> for a
        /// byte array; <c>{"uri", "mimeType", "text"}</c> or <c>{"uri", "mimeType", "bytes"}</c> for an
        /// svc.EmbeddedResource with a Uri and a Text or Bytes property (mimeType null when it has none).
        /// </summary>
        public static string Encode(object item)
        {
            if (item == null) return null;
            PSObject wrapped = PSObject.AsPSObject(item);
            byte[] bytes = wrapped.BaseObject as byte[];
            OrderedDictionary media = new OrderedDictionary();
            if (bytes != null)
            {
                media["bytes"] = Convert.ToBase64String(bytes);
                return JsonValue.Serialize(media);
            }
            if (!IsResource(wrapped)) return null;
            string uri = TextOf(wrapped, "Uri");
            string text = TextOf(wrapped, "Text");
            byte[] blob = Value(wrapped, "Bytes") as byte[];
            if (string.IsNullOrEmpty(uri) || (text == null && blob == null)) return null;
            media["uri"] = uri;
            media["mimeType"] = TextOf(wrapped, "MimeType");
            if (text != null) media["text"] = text;
            else media["bytes"] = Convert.ToBase64String(blob);
            return JsonValue.Serialize(media);
        }

        /// <summary>
        /// The bytes a byte array's media item takes as JSON, known from its length; 0 for any other item.
        /// </summary>
        public static long EncodedBytes(object item)
        {
            byte[] bytes = item == null ? null : PSObject.AsPSObject(item).BaseObject as byte[];
            return bytes == null ? 0 : 4L * ((bytes.LongLength + 2) / 3) + "{\"bytes\":\"\"}".Length;
        }

        /// <summary>
        /// What a media item too large for the output is sent as: a sentence in place of its bytes, of
        /// which any cut would be unreadable.
        /// </summary>
        public static string TooLarge(long bytes)
        {
            return JsonValue.Serialize("[svc: a media item of " + bytes + " bytes as JSON was left out: it alone exceeds what the call may send]");
        }

        private static bool IsResource(PSObject wrapped)
        {
            foreach (string name in wrapped.TypeNames)
            {
                if (string.Equals(name, ResourceTypeName, StringComparison.OrdinalIgnoreCase)) return true;
            }
            return false;
        }

        private static object Value(PSObject wrapped, string name)
        {
            PSPropertyInfo property = wrapped.Properties[name];
            if (property == null) return null;
            object value;
            try { value = property.Value; } catch (Exception) { return null; }
            PSObject inner = value as PSObject;
            return inner != null ? inner.BaseObject : value;
        }

        private static string TextOf(PSObject wrapped, string name)
        {
            object value = Value(wrapped, name);
            return value == null ? null : Convert.ToString(value, System.Globalization.CultureInfo.InvariantCulture);
        }
    }
}
