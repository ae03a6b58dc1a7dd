// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the change counters of the
// collections whose every write moves theirs (Hashtable, ArrayList, List<T>, OrderedDictionary), so
// that StartupObjects.cs can tell an unchanged one at the cost of one read, whatever its size. Measured
// on .NET 10: Dictionary<K,V> and HashSet<T> do not move theirs when a value is overwritten or a key
// removed, so they are compared item by item instead. The private fields are read through small
// compiled methods: reflection's FieldInfo.GetValue costs about 25 ns a read, these about 4.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Reflection;
using System.Reflection.Emit;

namespace Svc.Host
{
    /// <summary>Reads the change counters of the collection types whose every write moves them.</summary>
    public static class ChangeCounters
    {
        private static readonly Func<object, long> Hashtable = Reader(EngineMembers.HashtableVersion);
        private static readonly Func<object, long> ArrayList = Reader(EngineMembers.ArrayListVersion);
        private static readonly Func<object, object> OrderedTable = ObjectReader(EngineMembers.OrderedTable);
        private static readonly Func<object, object> OrderedArray = ObjectReader(EngineMembers.OrderedArray);
        // List<T>'s reader, compiled once per T.
        private static readonly Dictionary<Type, Func<object, long>> Lists = new Dictionary<Type, Func<object, long>>();

        /// <summary>
        /// The counter of objects of exactly <paramref name="type"/> (a subclass may keep its items
        /// elsewhere), or null when the type has none that every write moves, or this runtime lacks it.
        /// </summary>
        public static Func<object, long> For(Type type)
        {
            if (type == typeof(Hashtable)) return Hashtable;
            if (type == typeof(ArrayList)) return ArrayList;
            if (type == typeof(OrderedDictionary))
            {
                if (OrderedTable == null || OrderedArray == null || Hashtable == null || ArrayList == null) return null;
                return Ordered;
            }
            if (!type.IsGenericType || type.GetGenericTypeDefinition() != typeof(List<>)) return null;
            lock (Lists)
            {
                Func<object, long> reader;
                if (!Lists.TryGetValue(type, out reader)) Lists[type] = reader = Reader(EngineMembers.ListVersion(type));
                return reader;
            }
        }

        // An OrderedDictionary is a Hashtable and an ArrayList, each created on first use.
        private static long Ordered(object target)
        {
            object table = OrderedTable(target);
            object array = OrderedArray(target);
            long high = table == null ? -1 : Hashtable(table);
            long low = array == null ? -1 : ArrayList(array);
            return (high << 32) ^ (low & 0xFFFFFFFFL);
        }

        /// <summary>A compiled reader of the reference field <paramref name="field"/>; null when the field is missing.</summary>
        public static Func<object, object> ObjectReader(FieldInfo field)
        {
            if (field == null || field.FieldType.IsValueType) return null;
            return (Func<object, object>)Compile(field, typeof(object)).CreateDelegate(typeof(Func<object, object>));
        }

        // A compiled reader of an int counter, widened to long; null when the field is missing.
        private static Func<object, long> Reader(FieldInfo field)
        {
            if (field == null || field.FieldType != typeof(int)) return null;
            return (Func<object, long>)Compile(field, typeof(long)).CreateDelegate(typeof(Func<object, long>));
        }

        private static DynamicMethod Compile(FieldInfo field, Type result)
        {
            // Owned by this type, so the method lives in svc's own assembly, not in a new one.
            DynamicMethod method = new DynamicMethod("Read" + field.Name, result, new Type[] { typeof(object) }, typeof(ChangeCounters), true);
            ILGenerator il = method.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Castclass, field.DeclaringType);
            il.Emit(OpCodes.Ldfld, field);
            if (result == typeof(long)) il.Emit(OpCodes.Conv_I8);
            il.Emit(OpCodes.Ret);
            return method;
        }
    }
}
