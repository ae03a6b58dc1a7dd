// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the frames the worker sends,
// encoded without ConvertTo-Json (a twentieth of its time for an envelope).
using System;
using System.Collections;
using System.Collections.Specialized;
using System.Globalization;
using System.IO;
using System.Management.Automation;
using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;

namespace Svc.Host
{
    /// <summary>JSON text put into a frame as it is (output items encoded by ConvertTo-Json's engine).</summary>
    public sealed class RawJson
    {
        /// <summary>The JSON text, written unchanged.</summary>
        public string Text { get; private set; }

        /// <summary>Wraps JSON text that is known to be valid.</summary>
        public RawJson(string text)
        {
            Text = text;
        }
    }

    /// <summary>Encodes the values frames are made of.</summary>
    public static class JsonValue
    {
        // Non-ASCII text stays as it is (svc reads UTF-8); JSON's own escapes are still applied.
        private static readonly JsonWriterOptions Options = new JsonWriterOptions
        {
            Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
            SkipValidation = true,
        };

        /// <summary>
        /// One value as compact JSON: dictionaries as objects, other enumerables (not strings) as arrays,
        /// numbers and booleans as themselves, <see cref="RawJson"/> unchanged, anything else as its string.
        /// A <see cref="PSObject"/> is encoded as the object it wraps.
        /// </summary>
        public static string Serialize(object value)
        {
            using (MemoryStream buffer = new MemoryStream())
            {
                using (Utf8JsonWriter writer = new Utf8JsonWriter(buffer, Options)) Write(writer, value);
                return Encoding.UTF8.GetString(buffer.GetBuffer(), 0, (int)buffer.Length);
            }
        }

        /// <summary>The success response to request <paramref name="id"/> (protocol §2).</summary>
        public static string SuccessFrame(object id, object result)
        {
            OrderedDictionary frame = new OrderedDictionary();
            frame["id"] = id;
            frame["ok"] = true;
            frame["result"] = result;
            return Serialize(frame);
        }

        /// <summary>The failure response to request <paramref name="id"/>; <paramref name="record"/> is an ErrorInfo or null.</summary>
        public static string FailureFrame(object id, string kind, string message, object record)
        {
            OrderedDictionary failure = new OrderedDictionary();
            failure["kind"] = kind;
            failure["message"] = message;
            failure["record"] = record;
            OrderedDictionary frame = new OrderedDictionary();
            frame["id"] = id;
            frame["ok"] = false;
            frame["error"] = failure;
            return Serialize(frame);
        }

        private static void Write(Utf8JsonWriter writer, object value)
        {
            PSObject wrapped = value as PSObject;
            if (wrapped != null) value = wrapped.BaseObject;
            if (value == null) { writer.WriteNullValue(); return; }
            if (value is string) { writer.WriteStringValue((string)value); return; }
            if (value is bool) { writer.WriteBooleanValue((bool)value); return; }
            if (value is int) { writer.WriteNumberValue((int)value); return; }
            if (value is long) { writer.WriteNumberValue((long)value); return; }
            if (value is double || value is float)
            {
                double number = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(number) || double.IsInfinity(number)) writer.WriteStringValue(number.ToString(CultureInfo.InvariantCulture));
                else writer.WriteNumberValue(number);
                return;
            }
            RawJson raw = value as RawJson;
            if (raw != null) { writer.WriteRawValue(raw.Text, true); return; }
            IDictionary table = value as IDictionary;
            if (table != null)
            {
                writer.WriteStartObject();
                foreach (DictionaryEntry entry in table)
                {
                    writer.WritePropertyName(Convert.ToString(entry.Key, CultureInfo.InvariantCulture));
                    Write(writer, entry.Value);
                }
                writer.WriteEndObject();
                return;
            }
            IEnumerable items = value as IEnumerable;
            if (items != null)
            {
                writer.WriteStartArray();
                foreach (object item in items) Write(writer, item);
                writer.WriteEndArray();
                return;
            }
            if (value is byte || value is sbyte || value is short || value is ushort || value is uint || value is ulong || value is decimal)
            {
                writer.WriteRawValue(Convert.ToString(value, CultureInfo.InvariantCulture), true);
                return;
            }
            writer.WriteStringValue(Convert.ToString(value, CultureInfo.InvariantCulture));
        }
    }
}
