// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the stream records of a running
// call whose client asked for log messages (invoke `log`, protocol §4.4). They are taken in the order
// the command writes them and sent in batches with the slot's 100 ms look, as `log` frames; the result
// still carries every record, as it does without `log`.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Management.Automation;
using System.Management.Automation.Runspaces;

namespace Svc.Host
{
    /// <summary>The records of one call sent while it runs, and the preferences raised for them.</summary>
    public sealed class LiveLog
    {
        /// <summary>
        /// Records held between two looks; later ones are only counted (<c>dropped</c>). With strings cut
        /// to <c>textBytes</c> (1/64 of MaxResultBytes) a frame stays within what a result may take, and a
        /// command writing millions of records holds no more than these.
        /// </summary>
        public const int HeldRecords = 64;

        private static readonly string[] Preferences = { "VerbosePreference", "DebugPreference" };
        private readonly object _gate = new object();
        private List<OrderedDictionary> _held = new List<OrderedDictionary>();
        private int _dropped;
        private readonly CallLimits _limits;
        private readonly Runspace _worker;
        // The preferences this call raised to Continue, with the values they had (put back at its end).
        private readonly Dictionary<string, object> _saved = new Dictionary<string, object>();

        private LiveLog(Runspace worker, CallLimits limits)
        {
            _worker = worker;
            _limits = limits;
        }

        /// <summary>
        /// The rank of an invoke's <c>log</c>: 0 for "debug" (every stream), 1 for "info" (warnings and
        /// information), 2 for "warning"; -1 when the request has none. Throws with a one-sentence message
        /// for any other value.
        /// </summary>
        public static int RankOf(object value)
        {
            if (value == null) return -1;
            string level = value as string;
            if (level == "debug") return 0;
            if (level == "info") return 1;
            if (level == "warning") return 2;
            throw new ArgumentException("The invoke log level '" + TextCut.CutMiddle(Convert.ToString(value) ?? "", 80) + "' is not debug, info or warning.");
        }

        /// <summary>
        /// Watches the streams of <paramref name="streams"/> at <paramref name="rank"/> (<see cref="RankOf"/>)
        /// and above. At "debug" the worker's $VerbosePreference and $DebugPreference are raised to Continue
        /// (when they are not already), so verbose and debug records are written at all; <see cref="PutBack"/>
        /// restores them.
        /// </summary>
        public static LiveLog Start(int rank, Runspace worker, PSDataStreams streams, CallLimits limits)
        {
            LiveLog log = new LiveLog(worker, limits);
            log.Watch(streams.Warning, "warning", r => r.Message);
            if (rank <= 1) log.Watch(streams.Information, "information", r => LanguagePrimitives.ConvertTo<string>(r.MessageData) ?? "");
            if (rank == 0)
            {
                log.Watch(streams.Verbose, "verbose", r => r.Message);
                log.Watch(streams.Debug, "debug", r => r.Message);
                foreach (string name in Preferences)
                {
                    object value = worker.SessionStateProxy.GetVariable(name);
                    if (value is ActionPreference && (ActionPreference)value == ActionPreference.Continue) continue;
                    log._saved[name] = value;
                    worker.SessionStateProxy.SetVariable(name, ActionPreference.Continue);
                }
            }
            return log;
        }

        // On the thread that writes the record (the pipeline's): its text is made there, where a
        // message object's ToString may run script, and held for the next look.
        private void Watch<T>(PSDataCollection<T> collection, string stream, Func<T, string> message)
        {
            collection.DataAdded += (sender, e) =>
            {
                lock (_gate)
                {
                    if (_held.Count >= HeldRecords)
                    {
                        _dropped++;
                        return;
                    }
                }
                OrderedDictionary record = new OrderedDictionary();
                record["stream"] = stream;
                try { record["message"] = message(collection[e.Index]) ?? ""; }
                catch (Exception) { return; /* a record whose text cannot be made stays in the result only */ }
                lock (_gate)
                {
                    if (_held.Count < HeldRecords) _held.Add(record);
                    else _dropped++;
                }
            };
        }

        /// <summary>
        /// The <c>log</c> frame of call <paramref name="id"/> for the records written since the last look
        /// (each string cut to the call's <c>textBytes</c>), or null when none were.
        /// </summary>
        public string TakeFrame(long id)
        {
            List<OrderedDictionary> records;
            int dropped;
            lock (_gate)
            {
                if (_held.Count == 0 && _dropped == 0) return null;
                records = _held;
                dropped = _dropped;
                _held = new List<OrderedDictionary>();
                _dropped = 0;
            }
            ArrayList list = new ArrayList(records.Count);
            foreach (OrderedDictionary record in records) list.Add(_limits != null ? _limits.Cut(record) : record);
            OrderedDictionary frame = new OrderedDictionary();
            frame["type"] = "log";
            frame["id"] = id;
            frame["records"] = list;
            if (dropped > 0) frame["dropped"] = dropped;
            return JsonValue.Serialize(frame);
        }

        /// <summary>Puts back the preferences <see cref="Start"/> raised; call once the command has ended.</summary>
        public void PutBack()
        {
            foreach (KeyValuePair<string, object> entry in _saved) _worker.SessionStateProxy.SetVariable(entry.Key, entry.Value);
            _saved.Clear();
        }
    }
}
