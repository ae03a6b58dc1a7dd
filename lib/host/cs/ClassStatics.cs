// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the static fields of the
// PowerShell classes a worker runspace had when startup ended (`class Foo { static [int]$Count }` in a
// startup module or the startup script). A class lives in the process, so `[Foo]::Count = 5` in one
// call is seen by every later call, on any runspace that knows the class. ProcessState puts them back
// with the rest of the process-wide state, before a call's response (docs/runspaces.md).
//
// A class's static initializer runs on first use, in a runspace that defined or imported the class;
// run from any other thread it waits for that runspace forever. So the host first runs the
// initializers of the classes its worker knows on the worker's own pipeline thread (lib/host/reset.ps1),
// and only then are the fields read here.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>The static fields of one worker's PowerShell classes, as they were after startup.</summary>
    public sealed class ClassStatics
    {
        private const BindingFlags Statics = BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.DeclaredOnly;
        private const string Helpers = "_<staticHelpers>";
        private const string KeeperName = "__sessionStateKeeper";
        // Every slot restores the classes of a startup module, which all slots share: one slot's copy of
        // a field's value, and of the objects it holds, is taken first and kept for all, so a slot that
        // starts while a sibling's call has changed the class does not take that change for clean.
        private static readonly object Gate = new object();
        private static readonly Dictionary<FieldInfo, object> FirstValues = new Dictionary<FieldInfo, object>();
        private static readonly Dictionary<FieldInfo, StartupObjects> FirstObjects = new Dictionary<FieldInfo, StartupObjects>();

        private readonly Runspace _worker;
        private readonly List<FieldInfo> _fields = new List<FieldInfo>();
        private string _retire;

        /// <summary>
        /// The PowerShell classes <paramref name="worker"/> knows (defined in it or imported into it), whose
        /// initializers can run on its pipeline thread. Throws <see cref="MissingMemberException"/> when
        /// this engine build keeps that elsewhere.
        /// </summary>
        public static Type[] TypesOf(Runspace worker)
        {
            List<Type> types = new List<Type>();
            foreach (Assembly assembly in AppDomain.CurrentDomain.GetAssemblies())
            {
                if (!assembly.IsDynamic || !assembly.IsDefined(typeof(DynamicClassImplementationAssemblyAttribute), false)) continue;
                Type[] defined;
                // A sibling slot may be defining classes into it right now.
                try { defined = assembly.GetTypes(); } catch (Exception) { continue; }
                foreach (Type type in defined)
                {
                    if (type.Name.EndsWith(Helpers, StringComparison.Ordinal) || type.IsValueType || type.IsInterface) continue;
                    if (Knows(worker, assembly.GetType(type.FullName + Helpers, false))) types.Add(type);
                }
            }
            return types.ToArray();
        }

        /// <summary>
        /// True when <paramref name="assembly"/> holds PowerShell classes that a sibling slot's runspace
        /// defined (one of <paramref name="hosts"/>, the host's own runspaces) and this worker does not
        /// know: a sibling's startup script made them, and their static state is that sibling's to
        /// restore (a class a sibling's call defines retires the process through that sibling's reset).
        /// </summary>
        public bool OfSibling(Assembly assembly, IEnumerable<Runspace> hosts)
        {
            if (!assembly.IsDynamic || !assembly.IsDefined(typeof(DynamicClassImplementationAssemblyAttribute), false)) return false;
            bool sibling = false;
            foreach (Type type in assembly.GetTypes())
            {
                if (type.Name.EndsWith(Helpers, StringComparison.Ordinal)) continue;
                Type helpers = assembly.GetType(type.FullName + Helpers, false);
                if (helpers == null) continue;
                if (Knows(_worker, helpers)) return false;
                foreach (Runspace host in hosts)
                {
                    if (!ReferenceEquals(host, _worker) && Knows(host, helpers)) { sibling = true; break; }
                }
            }
            return sibling;
        }

        // True when the class whose helper type is given has a session state in the worker runspace.
        private static bool Knows(Runspace worker, Type helpers)
        {
            // A class without a helper has no initializer to run.
            if (helpers == null) return true;
            FieldInfo keeperField = helpers.GetField(KeeperName, BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public);
            // The engine writes this field into every class it compiles: without it the class's
            // runspaces cannot be known, and its statics would go unrestored (EngineMembers.cs).
            if (keeperField == null) EngineMembers.Report(Helpers + "." + KeeperName);
            object keeper = keeperField != null ? keeperField.GetValue(null) : null;
            if (keeper == null) return false;
            object map = EngineMembers.Require(EngineMembers.ClassSessionStates, "SessionStateKeeper._stateMap").GetValue(keeper);
            MethodInfo lookup = map.GetType().GetMethod("TryGetValue");
            object[] arguments = new object[] { worker, null };
            return (bool)lookup.Invoke(map, arguments);
        }

        /// <summary>
        /// The static fields of <paramref name="types"/> (the classes <paramref name="worker"/> knows) now,
        /// and the objects they hold (as <see cref="StartupObjects"/> keeps them). Run the types'
        /// initializers first; a type whose initializer failed is left out (every use of it fails anyway).
        /// </summary>
        public ClassStatics(Runspace worker, Type[] types)
        {
            _worker = worker;
            lock (Gate)
            {
                foreach (Type type in types)
                {
                    FieldInfo[] fields = type.GetFields(Statics);
                    List<FieldInfo> kept = new List<FieldInfo>();
                    try
                    {
                        foreach (FieldInfo field in fields)
                        {
                            if (field.IsLiteral || field.IsInitOnly) continue;
                            if (!FirstValues.ContainsKey(field))
                            {
                                object value = field.GetValue(null);
                                FirstValues[field] = value;
                                OrderedDictionary root = new OrderedDictionary();
                                root["[" + type.Name + "]::" + field.Name] = value;
                                FirstObjects[field] = new StartupObjects(root);
                            }
                            kept.Add(field);
                        }
                    }
                    catch (TypeInitializationException)
                    {
                        continue;
                    }
                    _fields.AddRange(kept);
                }
            }
        }

        /// <summary>
        /// Puts back each field that differs and the items of the objects the fields held. A change that
        /// cannot be put back is kept for <see cref="RetireReason"/>.
        /// </summary>
        public void Restore()
        {
            if (_fields.Count == 0) return;
            lock (Gate)
            {
                foreach (FieldInfo field in _fields)
                {
                    object saved = FirstValues[field];
                    object now = field.GetValue(null);
                    bool same = ReferenceEquals(now, saved) || (now != null && (now is string || now is ValueType) && now.Equals(saved));
                    if (!same) field.SetValue(null, saved);
                    string reason = FirstObjects[field].Restore();
                    if (reason != null && _retire == null) _retire = reason;
                }
            }
        }

        /// <summary>Why the classes' static state cannot be put back, or null.</summary>
        public string RetireReason()
        {
            return _retire;
        }
    }
}
