// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): process-wide .NET settings
// that a call can change with one assignment and that change what later calls do, whoever makes them:
// the default web proxy and TLS settings (a later Invoke-WebRequest of another caller would go through
// a proxy the call chose, or skip certificate checks), handlers on the runtime's process-wide events
// (a FirstChanceException handler sees every later call's exceptions), console encodings, GC, regex
// and thread-pool settings, and trace listeners. (The static fields of PowerShell classes are kept by
// ClassStatics.cs, $PSStyle by StyleState.cs.) ProcessState takes them with the rest and Restore()
// puts them back (docs/runspaces.md).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics;
using System.Reflection;
using System.Threading;

namespace Svc.Host
{
    /// <summary>Process-wide static settings as they were at one moment.</summary>
    public sealed class StaticKnobs
    {
        private const BindingFlags Statics = BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.Static;
        private static readonly string[] Properties =
        {
            "System.Net.Http.HttpClient, System.Net.Http|DefaultProxy",
            "System.Net.WebRequest, System.Net.Requests|DefaultWebProxy",
            "System.Net.ServicePointManager, System.Net.ServicePoint|SecurityProtocol",
            "System.Net.ServicePointManager, System.Net.ServicePoint|ServerCertificateValidationCallback",
            "System.Net.ServicePointManager, System.Net.ServicePoint|CheckCertificateRevocationList",
            "System.Net.ServicePointManager, System.Net.ServicePoint|DefaultConnectionLimit",
            "System.Net.ServicePointManager, System.Net.ServicePoint|Expect100Continue",
            "System.Net.ServicePointManager, System.Net.ServicePoint|UseNagleAlgorithm",
            "System.Net.ServicePointManager, System.Net.ServicePoint|DnsRefreshTimeout",
            "System.Net.ServicePointManager, System.Net.ServicePoint|EnableDnsRoundRobin",
            "System.Net.ServicePointManager, System.Net.ServicePoint|MaxServicePointIdleTime",
            "System.Net.ServicePointManager, System.Net.ServicePoint|MaxServicePoints",
            "System.Console, System.Console|OutputEncoding",
            "System.Console, System.Console|InputEncoding",
            "System.Runtime.GCSettings|LatencyMode",
            "System.Text.RegularExpressions.Regex, System.Text.RegularExpressions|CacheSize",
            "System.Environment|ExitCode",
            "System.Diagnostics.Trace, System.Diagnostics.TraceSource|AutoFlush",
            "System.Diagnostics.Trace, System.Diagnostics.TraceSource|IndentSize",
            "System.Diagnostics.Trace, System.Diagnostics.TraceSource|UseGlobalLock",
        };
        // Types whose static events are process-wide: their handlers are kept as the delegate fields.
        private static readonly string[] EventTypes =
        {
            "System.AppContext",
            "System.Runtime.Loader.AssemblyLoadContext, System.Runtime.Loader",
            "System.Console, System.Console",
            "System.Threading.Tasks.TaskScheduler",
        };

        private readonly List<KeyValuePair<PropertyInfo, object>> _properties = new List<KeyValuePair<PropertyInfo, object>>();
        private readonly List<KeyValuePair<FieldInfo, object>> _fields = new List<KeyValuePair<FieldInfo, object>>();
        private readonly TraceListener[] _listeners;
        private readonly int[] _threads = new int[4];

        /// <summary>The settings now.</summary>
        public StaticKnobs()
        {
            foreach (string entry in Properties)
            {
                string[] parts = entry.Split('|');
                Type type = Type.GetType(parts[0], false);
                PropertyInfo property = type != null ? type.GetProperty(parts[1], Statics) : null;
                if (property == null || !property.CanWrite) continue;
                object value;
                try { value = property.GetValue(null); } catch (Exception) { continue; }
                _properties.Add(new KeyValuePair<PropertyInfo, object>(property, value));
            }
            foreach (string name in EventTypes)
            {
                Type type = Type.GetType(name, false);
                if (type == null) continue;
                foreach (FieldInfo field in type.GetFields(Statics))
                {
                    if (typeof(Delegate).IsAssignableFrom(field.FieldType) && !field.IsInitOnly && !field.IsLiteral) Keep(field);
                }
            }
            _listeners = ListenersNow();
            ThreadPool.GetMinThreads(out _threads[0], out _threads[1]);
            ThreadPool.GetMaxThreads(out _threads[2], out _threads[3]);
        }

        // The trace listeners as they are now. Sibling slots of the process start (and reset) on other
        // threads, and the collection is created lazily and has no public lock: Count and CopyTo may
        // disagree ("Destination array was not long enough" failed a slot's startup), so copy again
        // until they agree.
        private static TraceListener[] ListenersNow()
        {
            for (int attempt = 0; attempt < 20; attempt++)
            {
                try
                {
                    TraceListenerCollection listeners = Trace.Listeners;
                    TraceListener[] copy = new TraceListener[listeners.Count];
                    listeners.CopyTo(copy, 0);
                    if (Array.IndexOf(copy, null) < 0) return copy;
                }
                catch (ArgumentException) { /* changed between Count and CopyTo: again */ }
                Thread.Yield();
            }
            return new TraceListener[0];
        }

        private void Keep(FieldInfo field)
        {
            try { _fields.Add(new KeyValuePair<FieldInfo, object>(field, field.GetValue(null))); } catch (Exception) { /* not readable: not kept */ }
        }

        /// <summary>Puts back every setting that differs from when it was taken.</summary>
        public void Restore()
        {
            foreach (KeyValuePair<PropertyInfo, object> entry in _properties)
            {
                try
                {
                    if (!Same(entry.Key.GetValue(null), entry.Value)) entry.Key.SetValue(null, entry.Value);
                }
                catch (Exception) { /* a setting this platform refuses: left as it is */ }
            }
            foreach (KeyValuePair<FieldInfo, object> entry in _fields)
            {
                try
                {
                    if (!Same(entry.Key.GetValue(null), entry.Value)) entry.Key.SetValue(null, entry.Value);
                }
                catch (Exception) { /* left as it is */ }
            }
            TraceListener[] now = ListenersNow();
            bool same = now.Length == _listeners.Length;
            for (int i = 0; same && i < _listeners.Length; i++) same = ReferenceEquals(now[i], _listeners[i]);
            if (!same)
            {
                try
                {
                    TraceListenerCollection listeners = Trace.Listeners;
                    listeners.Clear();
                    foreach (TraceListener listener in _listeners) listeners.Add(listener);
                }
                catch (ArgumentException) { /* a sibling changed them at the same moment: left as they are */ }
            }
            int minWorkers, minPorts, maxWorkers, maxPorts;
            ThreadPool.GetMinThreads(out minWorkers, out minPorts);
            ThreadPool.GetMaxThreads(out maxWorkers, out maxPorts);
            if (maxWorkers != _threads[2] || maxPorts != _threads[3]) ThreadPool.SetMaxThreads(_threads[2], _threads[3]);
            if (minWorkers != _threads[0] || minPorts != _threads[1]) ThreadPool.SetMinThreads(_threads[0], _threads[1]);
        }

        private static bool Same(object left, object right)
        {
            if (ReferenceEquals(left, right)) return true;
            return left != null && (left is ValueType || left is string) && left.Equals(right);
        }
    }
}
