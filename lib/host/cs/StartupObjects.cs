// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the items, at every depth, of
// the collections and objects startup left in variables. A call that changes one in place
// (`$global:Cfg.Db.Name = 'x'`, `$global:Cfg.List.Add(1)`, a module's `$script:Cache.Inner.Hits++`)
// leaves every variable pointing at the same object, so the variable tables cannot see it. At startup
// the objects reachable from the variables are walked once and their items copied; each reset
// compares them with the copies and puts back, in place, what differs. The check reads at most
// MaxCheckedItems items: Hashtable, ArrayList, List<T> and OrderedDictionary count one each, as their
// own change counters say whether they changed (ChangeCounters.cs). State beyond the limits cannot be
// compared at a bounded cost, and a change the reset cannot undo cannot be put back: either retires
// the process (docs/runspaces.md).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Management.Automation;
using System.Reflection;
using System.Runtime.InteropServices;

namespace Svc.Host
{
    /// <summary>The objects reachable from a set of variables, as they were when startup ended.</summary>
    public sealed class StartupObjects
    {
        /// <summary>Items a reset's check may read (default 100,000): more retires the process after every call.</summary>
        public const int MaxCheckedItems = 100000;
        /// <summary>Items startup may copy (default 1,000,000): more retires the process after every call.</summary>
        public const int MaxCopiedItems = 1000000;
        /// <summary>
        /// Elements up to which an array of a primitive type is compared byte by byte and a List of a value
        /// type is copied (default 65,536). A larger array of values is compared by reference only, like
        /// any value; a larger List of values retires the process when its change counter moves.
        /// </summary>
        public const int MaxValueElements = 65536;

        private const BindingFlags Instance = BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public;
        private static readonly PropertyInfo InstanceMembers = EngineMembers.InstanceMembers;
        // The engine's table of a custom object's own members, and the ordered dictionary inside it whose
        // change counter moves when a member is added or removed.
        private static readonly Func<PSObject, object> MembersTable = InstanceMembers != null
            ? (Func<PSObject, object>)Delegate.CreateDelegate(typeof(Func<PSObject, object>), InstanceMembers.GetGetMethod(true), false)
            : null;
        private static readonly Func<object, object> MembersDictionary = InstanceMembers != null
            ? ChangeCounters.ObjectReader(EngineMembers.InstanceMemberTable)
            : null;
        private static readonly HashSet<string> Reserved = new HashSet<string>(
            new[] { "psbase", "psadapted", "psextended", "psobject", "pstypenames" }, StringComparer.OrdinalIgnoreCase);

        private enum Kind { Dictionary, List, GenericList, Primitives, Members, Fields, Sequence }

        private sealed class Watched
        {
            public Kind Kind;
            public object Target;
            public string Root;
            public bool Versioned;
            // The object whose change counter is read (the target, or a custom object's member table),
            // and its reader (null: none).
            public object Counter;
            public Func<object, long> CounterOf;
            public long Version;
            public object[] Keys;
            public object[] Values;
            public Array Copy;
        }

        // Restores of all slots of the process take turns: an object can be reachable from two of them
        // (a class's static field, shared by the process, held in a slot's global variable too).
        private static readonly object Gate = new object();
        private readonly List<Watched> _watched = new List<Watched>();
        private readonly string _overflow;

        /// <summary>
        /// Walks the objects reachable from <paramref name="roots"/> (a name, used in messages, to a value)
        /// and copies their items. Every object is walked once, however many places hold it.
        /// </summary>
        public StartupObjects(IDictionary roots)
        {
            HashSet<object> seen = new HashSet<object>(ReferenceEqualityComparer.Instance);
            Queue<KeyValuePair<string, object>> queue = new Queue<KeyValuePair<string, object>>();
            foreach (DictionaryEntry root in roots) queue.Enqueue(new KeyValuePair<string, object>(root.Key as string, root.Value));
            long checkedItems = 0, copiedItems = 0;
            List<object> children = new List<object>();
            while (queue.Count > 0)
            {
                KeyValuePair<string, object> next = queue.Dequeue();
                object node = Node(next.Value);
                if (node == null || !seen.Add(node)) continue;
                children.Clear();
                Watched watched;
                try { watched = Watch(node, next.Key, children); } catch (Exception) { watched = null; }
                if (watched == null) continue;
                checkedItems += CheckCost(watched);
                copiedItems += 1 + (watched.Values != null ? watched.Values.Length : watched.Copy != null ? watched.Copy.Length : 0);
                if (checkedItems > MaxCheckedItems || copiedItems > MaxCopiedItems)
                {
                    _overflow = "startup left more than " + (checkedItems > MaxCheckedItems ? MaxCheckedItems + " items to check" : MaxCopiedItems + " items to copy") +
                        " in the collections reachable from '" + next.Key + "' and the variables before it, more than a reset compares";
                    _watched.Clear();
                    return;
                }
                _watched.Add(watched);
                foreach (object child in children) queue.Enqueue(new KeyValuePair<string, object>(next.Key, child));
            }
        }

        /// <summary>Why the startup state cannot be checked at all (it is too large), or null.</summary>
        public string Overflow { get { return _overflow; } }

        // The object whose items are state: a custom object is its PSObject (its base object is one
        // shared instance), anything else wrapped is its base object. Null for values and strings.
        private static object Node(object value)
        {
            PSObject wrapped = value as PSObject;
            if (wrapped != null)
            {
                if (wrapped.BaseObject is PSCustomObject) return wrapped;
                value = wrapped.BaseObject;
            }
            if (value == null || value is string || value is ValueType || value is Delegate || value is ScriptBlock || value is MemberInfo) return null;
            return value;
        }

        private static long CheckCost(Watched watched)
        {
            if (watched.Versioned) return 1;
            if (watched.Kind == Kind.Primitives) return 1 + Buffer.ByteLength(watched.Copy) / 64;
            return 1 + watched.Values.Length;
        }

        // What to keep of one object, and its children; null when it holds no items a reset keeps (or
        // they cannot be read: such an object is left alone like any other that is not a collection).
        private static Watched Watch(object node, string root, List<object> children)
        {
            Watched watched = new Watched();
            watched.Target = node;
            watched.Root = root;
            Type type = node.GetType();
            if (node is PSObject)
            {
                watched.Kind = Kind.Members;
                ReadMembers(watched, (PSObject)node);
            }
            else if (node is IDictionary)
            {
                watched.Kind = Kind.Dictionary;
                ReadEntries(watched, (IDictionary)node);
            }
            else if (type.IsArray && type.GetElementType().IsValueType)
            {
                Array array = (Array)node;
                if (!type.GetElementType().IsPrimitive || array.Rank != 1 || array.Length > MaxValueElements) return null;
                watched.Kind = Kind.Primitives;
                watched.Copy = (Array)array.Clone();
                return watched;
            }
            else if (type.IsGenericType && type.GetGenericTypeDefinition() == typeof(List<>) && ChangeCounters.For(type) != null)
            {
                watched.Kind = Kind.GenericList;
                bool values = type.GetGenericArguments()[0].IsValueType;
                if (!values || ((IList)node).Count <= MaxValueElements) watched.Copy = (Array)type.GetMethod("ToArray").Invoke(node, null);
                if (!values) watched.Values = (object[])watched.Copy;
            }
            else if (node is IList)
            {
                watched.Kind = Kind.List;
                IList list = (IList)node;
                watched.Values = new object[list.Count];
                list.CopyTo(watched.Values, 0);
            }
            else if (IsPowerShellClass(type))
            {
                watched.Kind = Kind.Fields;
                List<object> fields = new List<object>();
                for (Type t = type; t != null && IsPowerShellClass(t); t = t.BaseType)
                {
                    foreach (FieldInfo field in t.GetFields(Instance | BindingFlags.DeclaredOnly)) fields.Add(field);
                }
                watched.Keys = fields.ToArray();
                watched.Values = new object[fields.Count];
                for (int i = 0; i < fields.Count; i++) watched.Values[i] = ((FieldInfo)fields[i]).GetValue(node);
            }
            else if (node is ICollection || IsGenericCollection(type))
            {
                watched.Kind = Kind.Sequence;
                List<object> items = new List<object>();
                foreach (object item in (IEnumerable)node) items.Add(item);
                watched.Values = items.ToArray();
            }
            else
            {
                return null;
            }
            if (watched.Counter == null) watched.Counter = node;
            watched.CounterOf = ChangeCounters.For(watched.Counter.GetType());
            watched.Version = watched.CounterOf != null ? watched.CounterOf(watched.Counter) : 0;
            // A custom object's counter says only whether its members are the same ones; their values are
            // compared at each check.
            watched.Versioned = watched.CounterOf != null && watched.Kind != Kind.Members;
            if (watched.Values != null) children.AddRange(watched.Values);
            return watched;
        }

        private static bool IsPowerShellClass(Type type)
        {
            return type.Assembly.IsDynamic && type.Assembly.IsDefined(typeof(DynamicClassImplementationAssemblyAttribute), false);
        }

        private static bool IsGenericCollection(Type type)
        {
            foreach (Type face in type.GetInterfaces())
            {
                if (!face.IsGenericType) continue;
                Type definition = face.GetGenericTypeDefinition();
                if (definition == typeof(ICollection<>) || definition == typeof(IReadOnlyCollection<>)) return true;
            }
            return false;
        }

        private static void ReadEntries(Watched watched, IDictionary table)
        {
            List<object> keys = new List<object>(table.Count);
            List<object> values = new List<object>(table.Count);
            IDictionaryEnumerator entries = table.GetEnumerator();
            while (entries.MoveNext()) { keys.Add(entries.Key); values.Add(entries.Value); }
            watched.Keys = keys.ToArray();
            watched.Values = values.ToArray();
        }

        // A custom object's own members (its properties as Add-Member and [pscustomobject] make them),
        // read from the engine's table of them: the public Properties go through the type data too.
        // The engine adds its reserved member sets (`psobject`, `psextended`) to that table when they
        // are first used; they are not the object's state.
        private static IEnumerable<PSMemberInfo> MembersOf(PSObject target)
        {
            if (InstanceMembers == null) throw new MissingMemberException("The engine has no member 'InstanceMembers' on PSObject.");
            foreach (PSMemberInfo member in (IEnumerable<PSMemberInfo>)InstanceMembers.GetValue(target))
            {
                if (!Reserved.Contains(member.Name)) yield return member;
            }
        }

        private static void ReadMembers(Watched watched, PSObject target)
        {
            object table = MembersTable != null && MembersDictionary != null ? MembersTable(target) : null;
            watched.Counter = table != null ? MembersDictionary(table) : null;
            List<object> members = new List<object>();
            List<object> values = new List<object>();
            foreach (PSMemberInfo member in MembersOf(target))
            {
                members.Add(member);
                PSNoteProperty note = member as PSNoteProperty;
                values.Add(note != null ? note.Value : null);
            }
            watched.Keys = members.ToArray();
            watched.Values = values.ToArray();
        }

        // True when the values of a custom object's notes are the saved ones (its members being the same).
        private static bool SameNotes(Watched watched)
        {
            for (int i = 0; i < watched.Keys.Length; i++)
            {
                PSNoteProperty note = watched.Keys[i] as PSNoteProperty;
                if (note != null && !Same(note.Value, watched.Values[i])) return false;
            }
            return true;
        }

        private static bool Same(object left, object right)
        {
            if (ReferenceEquals(left, right)) return true;
            return left != null && (left is string || left is ValueType) && left.Equals(right);
        }

        /// <summary>
        /// Puts back every object that differs from its copy, in place. Returns why the process must
        /// retire, or null: the state was too large to check, or a change cannot be undone (a collection
        /// that refuses the writes, a kind of collection a reset cannot refill, a large List of values).
        /// </summary>
        public string Restore()
        {
            if (_overflow != null) return _overflow;
            lock (Gate) return RestoreAll();
        }

        private string RestoreAll()
        {
            foreach (Watched watched in _watched)
            {
                if (watched.Versioned && watched.CounterOf(watched.Counter) == watched.Version) continue;
                if (watched.Kind == Kind.Members && watched.CounterOf != null && watched.CounterOf(watched.Counter) == watched.Version && SameNotes(watched)) continue;
                string reason;
                try { reason = Put(watched); }
                catch (Exception e) { reason = "a call changed an object reachable from '" + watched.Root + "' in a way a reset cannot undo (" + Inner(e).Message + ")"; }
                if (reason != null) return reason;
                if (watched.CounterOf != null) watched.Version = watched.CounterOf(watched.Counter);
            }
            return null;
        }

        private static Exception Inner(Exception e)
        {
            while (e is TargetInvocationException && e.InnerException != null) e = e.InnerException;
            return e;
        }

        // Compares one object with its copy and writes it back when it differs.
        private static string Put(Watched watched)
        {
            switch (watched.Kind)
            {
                case Kind.Dictionary: PutEntries(watched); return null;
                case Kind.List: PutItems((IList)watched.Target, watched.Values); return null;
                case Kind.GenericList: return PutGenericList(watched);
                case Kind.Primitives: PutPrimitives(watched); return null;
                case Kind.Members: PutMembers(watched); return null;
                case Kind.Fields:
                    for (int i = 0; i < watched.Keys.Length; i++)
                    {
                        FieldInfo field = (FieldInfo)watched.Keys[i];
                        if (!Same(field.GetValue(watched.Target), watched.Values[i])) field.SetValue(watched.Target, watched.Values[i]);
                    }
                    return null;
                default:
                    int n = 0;
                    foreach (object item in (IEnumerable)watched.Target)
                    {
                        if (n >= watched.Values.Length || !Same(item, watched.Values[n])) return Refused(watched);
                        n++;
                    }
                    return n == watched.Values.Length ? null : Refused(watched);
            }
        }

        private static string Refused(Watched watched)
        {
            return "a call changed the items of a " + watched.Target.GetType().Name + " reachable from '" + watched.Root + "', which a reset cannot put back";
        }

        private static void PutEntries(Watched watched)
        {
            IDictionary table = (IDictionary)watched.Target;
            bool same = table.Count == watched.Keys.Length;
            if (same)
            {
                int i = 0;
                IDictionaryEnumerator entries = table.GetEnumerator();
                while (same && entries.MoveNext())
                {
                    same = Same(entries.Key, watched.Keys[i]) && Same(entries.Value, watched.Values[i]);
                    i++;
                }
            }
            if (same) return;
            table.Clear();
            for (int i = 0; i < watched.Keys.Length; i++) table[watched.Keys[i]] = watched.Values[i];
            // A Hashtable refilled may enumerate in another order: the copy follows it, so the next
            // comparison (made in order) does not see a change where there is none.
            ReadEntries(watched, table);
        }

        private static void PutItems(IList list, object[] saved)
        {
            bool same = list.Count == saved.Length;
            for (int i = 0; same && i < saved.Length; i++) same = Same(list[i], saved[i]);
            if (same) return;
            if (list.IsFixedSize)
            {
                // An array: its length cannot have changed.
                for (int i = 0; i < saved.Length; i++)
                {
                    if (!Same(list[i], saved[i])) list[i] = saved[i];
                }
                return;
            }
            list.Clear();
            foreach (object item in saved) list.Add(item);
        }

        private static string PutGenericList(Watched watched)
        {
            if (watched.Copy == null) return "a call changed a list of more than " + MaxValueElements + " values reachable from '" + watched.Root + "', which a reset does not copy";
            IList list = (IList)watched.Target;
            if (watched.Values != null)
            {
                PutItems(list, watched.Values);
                return null;
            }
            // Values: refilled from the typed copy, so no element is boxed.
            list.Clear();
            watched.Target.GetType().GetMethod("AddRange").Invoke(watched.Target, new object[] { watched.Copy });
            return null;
        }

        private static void PutPrimitives(Watched watched)
        {
            Array target = (Array)watched.Target;
            int length = Buffer.ByteLength(target);
            Span<byte> now = MemoryMarshal.CreateSpan(ref MemoryMarshal.GetArrayDataReference(target), length);
            ReadOnlySpan<byte> saved = MemoryMarshal.CreateReadOnlySpan(ref MemoryMarshal.GetArrayDataReference(watched.Copy), length);
            if (!now.SequenceEqual(saved)) saved.CopyTo(now);
        }

        private static void PutMembers(Watched watched)
        {
            PSObject target = (PSObject)watched.Target;
            object collection = InstanceMembers.GetValue(target);
            bool same = true;
            int n = 0;
            foreach (PSMemberInfo member in MembersOf(target))
            {
                if (n >= watched.Keys.Length || !ReferenceEquals(member, watched.Keys[n])) { same = false; break; }
                n++;
            }
            if (!same || n != watched.Keys.Length)
            {
                // Put back the very member objects (Properties.Add would add copies of them).
                List<string> names = new List<string>();
                foreach (PSMemberInfo member in MembersOf(target)) names.Add(member.Name);
                MethodInfo remove = collection.GetType().GetMethod("Remove", new Type[] { typeof(string) });
                MethodInfo add = collection.GetType().GetMethod("Add", new Type[] { typeof(PSMemberInfo) });
                foreach (string name in names) remove.Invoke(collection, new object[] { name });
                foreach (object member in watched.Keys) add.Invoke(collection, new object[] { member });
            }
            for (int i = 0; i < watched.Keys.Length; i++)
            {
                PSNoteProperty note = watched.Keys[i] as PSNoteProperty;
                if (note != null && !Same(note.Value, watched.Values[i])) note.Value = watched.Values[i];
            }
        }
    }
}
