// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the limits svc sets on what one
// `invoke` may send it (protocol §4.4, `limits`), and the stream records kept within them. svc derives
// every number from ShellConfiguration:MaxResultBytes and refuses a frame larger than they allow, so a
// call's output or records past what svc keeps are counted here and never sent.
using System;
using System.Collections;
using System.Collections.Specialized;
using System.Text;

namespace Svc.Host
{
    /// <summary>The limits of one call's response, and the stream records kept within them so far.</summary>
    public sealed class CallLimits
    {
        /// <summary>Projected types reported in <c>shape.types</c>.</summary>
        public const int ShapeTypes = 16;

        /// <summary>Names in each list of the shape report (shown, omitted, unknown properties).</summary>
        public const int ShapeNames = 256;

        /// <summary>Bytes of JSON of each name in the shape report.</summary>
        public const int NameBytes = 128;

        private long _used;
        private bool _full;

        /// <summary>Output items are sent whole while the output array's JSON stays within this many bytes.</summary>
        public long OutputBytes { get; private set; }

        /// <summary>A first item larger than <see cref="OutputBytes"/> is shortened to about this many bytes.</summary>
        public long FirstItemBytes { get; private set; }

        /// <summary>The records of all streams together (the terminating error aside) take at most this many bytes.</summary>
        public long StreamBytes { get; private set; }

        /// <summary>Each string of a stream or progress record is cut to this many bytes of JSON.</summary>
        public long TextBytes { get; private set; }

        /// <summary>
        /// True when svc lets the worker stop the command once its output is full (the command only
        /// reads, so stopping it loses nothing but output svc could not keep). Default false.
        /// </summary>
        public bool StopWhenFull { get; private set; }

        /// <summary>Records left out per stream (<c>errors</c>, <c>warnings</c>, ...); empty when none were.</summary>
        public OrderedDictionary Dropped { get; private set; }

        private CallLimits()
        {
            Dropped = new OrderedDictionary();
        }

        /// <summary>
        /// The limits of an invoke's <c>limits</c> object; null when it has none (nothing is bounded).
        /// Throws with a one-sentence message when a value is missing or not a positive integer.
        /// </summary>
        public static CallLimits From(object value)
        {
            if (value == null) return null;
            Hashtable table = value as Hashtable;
            if (table == null) throw new ArgumentException("The invoke limits are not an object.");
            return new CallLimits
            {
                OutputBytes = Positive(table, "outputBytes"),
                FirstItemBytes = Positive(table, "firstItemBytes"),
                StreamBytes = Positive(table, "streamBytes"),
                TextBytes = Positive(table, "textBytes"),
                StopWhenFull = Flag(table, "stopWhenFull"),
            };
        }

        /// <summary>
        /// Adds the record <paramref name="make"/> builds to <paramref name="into"/>, its strings cut to
        /// <see cref="TextBytes"/>, while the records kept so far stay within <see cref="StreamBytes"/>.
        /// Once one does not fit, it and every later record of any stream are only counted, unbuilt.
        /// </summary>
        public void Keep(ArrayList into, string stream, Func<object> make)
        {
            if (!_full)
            {
                object record = TextCut.CutStrings(make(), TextBytes);
                long size = Encoding.UTF8.GetByteCount(JsonValue.Serialize(record)) + 1;
                if (_used + size <= StreamBytes)
                {
                    _used += size;
                    into.Add(record);
                    return;
                }
                _full = true;
            }
            Dropped[stream] = (Dropped[stream] == null ? 0 : (int)Dropped[stream]) + 1;
        }

        /// <summary>A record kept whatever the budget (the terminating error), its strings cut to <see cref="TextBytes"/>.</summary>
        public object Cut(object record)
        {
            return TextCut.CutStrings(record, TextBytes);
        }

        /// <summary>At most <see cref="ShapeNames"/> of <paramref name="names"/>, each cut to <see cref="NameBytes"/>.</summary>
        public static string[] Names(string[] names)
        {
            int count = Math.Min(names.Length, ShapeNames);
            string[] kept = new string[count];
            for (int i = 0; i < count; i++) kept[i] = TextCut.CutMiddle(names[i], NameBytes);
            return kept;
        }

        private static bool Flag(Hashtable table, string name)
        {
            object value = table[name];
            if (value != null && !(value is bool)) throw new ArgumentException("The invoke limit '" + name + "' is not a boolean.");
            return value != null && (bool)value;
        }

        private static long Positive(Hashtable table, string name)
        {
            object value = table[name];
            if (!(value is int || value is long) || Convert.ToInt64(value) < 1)
            {
                throw new ArgumentException("The invoke limit '" + name + "' is not a positive integer.");
            }
            return Convert.ToInt64(value);
        }
    }
}
