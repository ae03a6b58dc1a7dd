// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): what the slots of one process
// share, as it was when the process's first slot's startup ended (before any call ran in it). Restore() puts back what can be put back cheaply (the
// environment, the current directory, default cultures, AppContext data and switches, $PSStyle, the
// static fields of PowerShell classes); the slot loop runs it before a call's response is sent, so
// the next call (often on a sibling runspace) never sees a finished call's changes. RetireReason()
// names what cannot be put back (assemblies a call loaded, runspaces it left open): the process is then
// retired (docs/runspaces.md).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Management.Automation.Runspaces;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>The process-wide state one slot returns to.</summary>
    public sealed class ProcessState
    {
        private static readonly object RegistryGate = new object();
        // The host's own runspaces (each slot's and each worker's), in any slot of the process.
        private static readonly HashSet<Runspace> HostRunspaces = new HashSet<Runspace>();
        // The first slot's state (under RegistryGate); its process-wide parts are every slot's.
        private static ProcessState _first;
        // Not public API (EngineMembers.cs): a process that lacks them retires after every call.
        private static readonly PropertyInfo RunspaceList = EngineMembers.RunspaceList;
        private static readonly FieldInfo AppData = EngineMembers.AppContextData;
        private static readonly FieldInfo AppSwitches = EngineMembers.AppContextSwitches;

        private readonly EnvironmentSnapshot _environment;
        private readonly string _directory;
        private readonly CultureInfo _culture;
        private readonly CultureInfo _uiCulture;
        private readonly Dictionary<object, object> _data;
        private readonly Dictionary<object, object> _switches;
        private readonly HashSet<Assembly> _assemblies = new HashSet<Assembly>();
        private readonly HashSet<Runspace> _runspaces = new HashSet<Runspace>();
        private readonly string[] _trusted;
        private readonly StaticKnobs _knobs;
        private readonly StyleState _style;
        private readonly ClassStatics _classes;

        private ProcessState(string[] trusted, ClassStatics classes)
        {
            // The process-wide values are the first slot's, taken before any call ran in the process: a
            // slot that starts while a sibling's call has set $env:X (or a default culture) would
            // otherwise take that for clean and put it back after every call, for every later caller.
            ProcessState first;
            lock (RegistryGate) first = _first;
            if (first != null)
            {
                _environment = first._environment;
                _directory = first._directory;
                _culture = first._culture;
                _uiCulture = first._uiCulture;
                _data = first._data;
                _switches = first._switches;
                _knobs = first._knobs;
                ThreadCulture = first.ThreadCulture;
                ThreadUICulture = first.ThreadUICulture;
            }
            else
            {
                _environment = EnvironmentSnapshot.Take();
                _directory = Environment.CurrentDirectory;
                _culture = CultureInfo.DefaultThreadCurrentCulture;
                _uiCulture = CultureInfo.DefaultThreadCurrentUICulture;
                _data = Copy(AppData);
                _switches = Copy(AppSwitches);
                _knobs = new StaticKnobs();
                ThreadCulture = CultureInfo.CurrentCulture;
                ThreadUICulture = CultureInfo.CurrentUICulture;
            }
            _trusted = trusted;
            foreach (Assembly assembly in AppDomain.CurrentDomain.GetAssemblies()) _assemblies.Add(assembly);
            foreach (Runspace runspace in OpenRunspaces()) _runspaces.Add(runspace);
            _style = StyleState.Take();
            _classes = classes;
            lock (RegistryGate)
            {
                if (_first == null) _first = this;
            }
        }

        /// <summary>The culture of a thread that sets none, as the first slot's thread had it: what each call's pipeline thread returns to.</summary>
        public CultureInfo ThreadCulture { get; private set; }

        /// <summary>The UI culture of a thread that sets none, as the first slot's thread had it.</summary>
        public CultureInfo ThreadUICulture { get; private set; }

        /// <summary>
        /// The state now. Assemblies loaded later from under <paramref name="trusted"/> directories (the
        /// engine's, the runtime's, those of modules imported at startup) are not a reason to retire.
        /// </summary>
        public static ProcessState Take(string[] trusted)
        {
            return new ProcessState(trusted ?? new string[0], null);
        }

        /// <summary>As <see cref="Take(string[])"/>, with the static fields of the worker's PowerShell classes (null: none).</summary>
        public static ProcessState Take(string[] trusted, ClassStatics classes)
        {
            return new ProcessState(trusted ?? new string[0], classes);
        }

        /// <summary>
        /// The process's working set in bytes, the figure <c>Environment.WorkingSet</c> gives: on Linux the
        /// resident pages of <c>/proc/self/statm</c>, read in place. Every reset reports it, and
        /// <c>Environment.WorkingSet</c> builds a Process object through reflection and parses
        /// <c>/proc/self/stat</c> for it: about a quarter of the fast reset's CPU.
        /// </summary>
        public static long WorkingSetBytes()
        {
            if (OperatingSystem.IsLinux())
            {
                try
                {
                    Microsoft.Win32.SafeHandles.SafeFileHandle statm = _statm ?? (_statm = File.OpenHandle("/proc/self/statm"));
                    Span<byte> text = stackalloc byte[128];
                    int length = RandomAccess.Read(statm, text, 0);
                    // "size resident shared ...", in pages.
                    int at = text.Slice(0, length).IndexOf((byte)' ') + 1;
                    long pages = 0;
                    int digits = 0;
                    for (; at > 0 && at < length && text[at] >= (byte)'0' && text[at] <= (byte)'9'; at++, digits++) pages = pages * 10 + (text[at] - (byte)'0');
                    if (digits > 0) return pages * Environment.SystemPageSize;
                }
                catch (Exception)
                {
                    // Read as the runtime reads it, below.
                }
            }
            return Environment.WorkingSet;
        }

        // /proc/self/statm, kept open: every read at offset 0 gives the figures of that moment.
        private static Microsoft.Win32.SafeHandles.SafeFileHandle _statm;

        /// <summary>Counts <paramref name="runspace"/> as the host's own in every slot of this process.</summary>
        public static void AddHostRunspace(Runspace runspace)
        {
            lock (RegistryGate) HostRunspaces.Add(runspace);
        }

        /// <summary>
        /// Puts back the environment, the current directory, default cultures, AppContext data, the settings
        /// of <see cref="StaticKnobs"/>, <c>$PSStyle</c> (<see cref="StyleState"/>) and the static fields of
        /// the worker's PowerShell classes (<see cref="ClassStatics"/>).
        /// </summary>
        public void Restore()
        {
            _environment.Restore();
            if (!string.Equals(Environment.CurrentDirectory, _directory, StringComparison.Ordinal))
            {
                try { Environment.CurrentDirectory = _directory; } catch (Exception) { /* gone: the next check says so */ }
            }
            if (!ReferenceEquals(CultureInfo.DefaultThreadCurrentCulture, _culture)) CultureInfo.DefaultThreadCurrentCulture = _culture;
            if (!ReferenceEquals(CultureInfo.DefaultThreadCurrentUICulture, _uiCulture)) CultureInfo.DefaultThreadCurrentUICulture = _uiCulture;
            Put(AppData, _data);
            Put(AppSwitches, _switches);
            _knobs.Restore();
            _style.Restore();
            if (_classes != null) _classes.Restore();
        }

        /// <summary>
        /// Why this process cannot be returned to its state (so it must be retired), or null: an
        /// assembly loaded into memory or from outside the trusted directories (Add-Type, a PowerShell
        /// class, Assembly.Load: their static state cannot be known), a runspace left open that is not
        /// the host's, a current directory that cannot be put back, or a change to the objects a PowerShell
        /// class's static fields hold that cannot be put back.
        /// </summary>
        public string RetireReason()
        {
            if (!string.Equals(Environment.CurrentDirectory, _directory, StringComparison.Ordinal)) return "the process's current directory could not be restored";
            string classes = _classes != null ? _classes.RetireReason() : null;
            if (classes != null) return classes;
            foreach (Assembly assembly in AppDomain.CurrentDomain.GetAssemblies())
            {
                if (_assemblies.Contains(assembly)) continue;
                if (!Trusted(assembly) && !OfSibling(assembly)) return "a call loaded the assembly '" + assembly.GetName().Name + "', whose static state a reset cannot restore";
                _assemblies.Add(assembly);
            }
            foreach (Runspace runspace in OpenRunspaces())
            {
                if (_runspaces.Contains(runspace)) continue;
                bool own;
                lock (RegistryGate) own = HostRunspaces.Contains(runspace);
                if (!own) return "a call left runspace " + runspace.Id + " open";
            }
            return null;
        }

        // The PowerShell classes a sibling slot's startup script defined after this slot's startup (each
        // runspace compiles a startup script's classes into an assembly of its own).
        private bool OfSibling(Assembly assembly)
        {
            if (_classes == null) return false;
            Runspace[] hosts;
            lock (RegistryGate)
            {
                hosts = new Runspace[HostRunspaces.Count];
                HostRunspaces.CopyTo(hosts);
            }
            try { return _classes.OfSibling(assembly, hosts); } catch (Exception) { return false; }
        }

        private bool Trusted(Assembly assembly)
        {
            // DynamicMethods live in one shared anonymous assembly that holds no state of a call.
            if (assembly.IsDynamic) return assembly.FullName != null && assembly.FullName.StartsWith("Anonymously Hosted DynamicMethods Assembly", StringComparison.Ordinal);
            string location = assembly.Location;
            if (string.IsNullOrEmpty(location)) return false;
            foreach (string directory in _trusted)
            {
                if (location.StartsWith(directory, StringComparison.Ordinal)) return true;
            }
            return false;
        }

        private static List<Runspace> OpenRunspaces()
        {
            List<Runspace> open = new List<Runspace>();
            IEnumerable all = RunspaceList != null ? RunspaceList.GetValue(null) as IEnumerable : null;
            if (all == null) return open;
            foreach (object item in all)
            {
                Runspace runspace = item as Runspace;
                // A remote runspace's state is in another process: Start-Job's, which the full reset
                // ends with its job (Remove-Job), or a PSSession's.
                if (runspace == null || runspace.RunspaceIsRemote) continue;
                RunspaceState state = runspace.RunspaceStateInfo.State;
                if (state == RunspaceState.Opened || state == RunspaceState.Opening || state == RunspaceState.Connecting || state == RunspaceState.Disconnected) open.Add(runspace);
            }
            return open;
        }

        // A copy of one of AppContext's tables (null when this runtime has no such field).
        private static Dictionary<object, object> Copy(FieldInfo field)
        {
            IDictionary table = field != null ? field.GetValue(null) as IDictionary : null;
            Dictionary<object, object> copy = new Dictionary<object, object>();
            if (table == null) return field != null ? copy : null;
            lock (table)
            {
                foreach (DictionaryEntry entry in table) copy[entry.Key] = entry.Value;
            }
            return copy;
        }

        // Puts one of AppContext's tables back as it was copied: keys added since removed, others reset.
        private static void Put(FieldInfo field, Dictionary<object, object> saved)
        {
            if (saved == null) return;
            IDictionary table = field.GetValue(null) as IDictionary;
            if (table == null) return;
            lock (table)
            {
                if (table.Count == saved.Count)
                {
                    bool same = true;
                    foreach (DictionaryEntry entry in table)
                    {
                        object value;
                        if (!saved.TryGetValue(entry.Key, out value) || !Same(value, entry.Value)) { same = false; break; }
                    }
                    if (same) return;
                }
                List<object> added = new List<object>();
                foreach (DictionaryEntry entry in table)
                {
                    if (!saved.ContainsKey(entry.Key)) added.Add(entry.Key);
                }
                foreach (object key in added) table.Remove(key);
                foreach (KeyValuePair<object, object> entry in saved)
                {
                    if (!table.Contains(entry.Key) || !Same(table[entry.Key], entry.Value)) table[entry.Key] = entry.Value;
                }
            }
        }

        private static bool Same(object left, object right)
        {
            if (ReferenceEquals(left, right)) return true;
            return left is ValueType && left.Equals(right);
        }
    }
}
