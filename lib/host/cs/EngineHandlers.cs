// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the .NET event handlers and
// actions on one worker runspace's long-lived engine objects, as they were when startup ended. A call
// can attach a script block to them (`$ExecutionContext.InvokeCommand.LocationChangedAction = {...}`,
// `[runspace]::DefaultRunspace.add_AvailabilityChanged({...})`, `.Debugger.add_DebuggerStop({...})`)
// and it then runs inside every later call of the runspace, whoever makes it, and inside the reset
// itself. Those are not PowerShell event subscriptions (Get-EventSubscriber lists none of them), so
// the reset script never sees them: EngineState puts them back on both reset paths.
using System;
using System.Collections.Generic;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>Every delegate field of some objects (their own and their base types'), as it was at one moment.</summary>
    public sealed class EngineHandlers
    {
        private const BindingFlags Members = BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.DeclaredOnly;
        private readonly List<KeyValuePair<object, FieldInfo>> _fields = new List<KeyValuePair<object, FieldInfo>>();
        private readonly List<object> _values = new List<object>();

        /// <summary>The delegate fields of <paramref name="targets"/> now (null targets are skipped).</summary>
        public EngineHandlers(params object[] targets)
        {
            foreach (object target in targets)
            {
                if (target == null) continue;
                for (Type type = target.GetType(); type != null && type != typeof(object); type = type.BaseType)
                {
                    foreach (FieldInfo field in type.GetFields(Members))
                    {
                        if (field.IsInitOnly || !typeof(Delegate).IsAssignableFrom(field.FieldType)) continue;
                        _fields.Add(new KeyValuePair<object, FieldInfo>(target, field));
                        _values.Add(field.GetValue(target));
                    }
                }
            }
        }

        /// <summary>Puts back every field whose delegate is not the one it had.</summary>
        public void Restore()
        {
            for (int i = 0; i < _fields.Count; i++)
            {
                KeyValuePair<object, FieldInfo> entry = _fields[i];
                if (!ReferenceEquals(entry.Value.GetValue(entry.Key), _values[i])) entry.Value.SetValue(entry.Key, _values[i]);
            }
        }
    }
}
