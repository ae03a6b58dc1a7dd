// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): $PSStyle, one object for the
// whole process: `$PSStyle.OutputRendering = 'Host'`, `$PSStyle.Formatting.Error = ...` or
// `$PSStyle.FileInfo.Extension['.x'] = ...` in one call changes what every later call in the process
// renders. Its settable properties, those of its parts (Formatting, Progress, FileInfo) and the table
// of file extensions are taken once per process and put back with the rest of the process-wide state,
// before a call's response (ProcessState.Restore).
using System;
using System.Collections.Generic;
using System.Management.Automation;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>$PSStyle as it was when the first slot of the process had started.</summary>
    public sealed class StyleState
    {
        private static readonly object Gate = new object();
        private static StyleState _first;

        private readonly List<KeyValuePair<object, PropertyInfo>> _settings = new List<KeyValuePair<object, PropertyInfo>>();
        private readonly List<object> _values = new List<object>();
        private readonly FieldInfo _extensionsField;
        private readonly object _extensions;
        private readonly Dictionary<string, string> _extensionItems;

        private StyleState()
        {
            PSStyle style = PSStyle.Instance;
            Keep(style, true);
            // The table of file extensions has no setter to restore it through; a build that keeps it
            // elsewhere leaves it unrestored rather than fail the worker's startup.
            PropertyInfo extension = style.FileInfo.GetType().GetProperty("Extension");
            object table = extension != null ? extension.GetValue(style.FileInfo) : null;
            _extensionsField = table != null ? EngineMembers.FileExtensionTable : null;
            _extensions = table;
            Dictionary<string, string> items = _extensionsField != null ? _extensionsField.GetValue(table) as Dictionary<string, string> : null;
            if (items != null) _extensionItems = new Dictionary<string, string>(items, items.Comparer);
        }

        /// <summary>
        /// $PSStyle as the first slot of this process took it, after its startup. Every slot runs the same
        /// startup, and a slot starting later could find a sibling's call's change in place.
        /// </summary>
        public static StyleState Take()
        {
            lock (Gate) return _first ??= new StyleState();
        }

        // The settable properties of a part of $PSStyle; from $PSStyle itself, its parts too (the
        // properties whose types are nested in PSStyle and have no setter).
        private void Keep(object target, bool parts)
        {
            foreach (PropertyInfo property in target.GetType().GetProperties(BindingFlags.Instance | BindingFlags.Public))
            {
                if (property.GetIndexParameters().Length > 0) continue;
                if (property.CanWrite && property.GetSetMethod() != null)
                {
                    _settings.Add(new KeyValuePair<object, PropertyInfo>(target, property));
                    _values.Add(property.GetValue(target));
                }
                else if (parts && property.PropertyType.DeclaringType == typeof(PSStyle))
                {
                    object part = property.GetValue(target);
                    if (part != null) Keep(part, false);
                }
            }
        }

        /// <summary>Puts back every property that differs, and the table of file extensions.</summary>
        public void Restore()
        {
            lock (Gate)
            {
                for (int i = 0; i < _settings.Count; i++)
                {
                    KeyValuePair<object, PropertyInfo> setting = _settings[i];
                    object now = setting.Value.GetValue(setting.Key);
                    object saved = _values[i];
                    if (ReferenceEquals(now, saved) || (now != null && now.Equals(saved))) continue;
                    try { setting.Value.SetValue(setting.Key, saved); } catch (Exception) { /* refused by this build: left as it is */ }
                }
                if (_extensionItems == null) return;
                Dictionary<string, string> items = _extensionsField.GetValue(_extensions) as Dictionary<string, string>;
                if (items != null && items.Count == _extensionItems.Count)
                {
                    bool same = true;
                    foreach (KeyValuePair<string, string> entry in _extensionItems)
                    {
                        string value;
                        if (!items.TryGetValue(entry.Key, out value) || !string.Equals(value, entry.Value, StringComparison.Ordinal)) { same = false; break; }
                    }
                    if (same) return;
                }
                // A new table rather than the old one refilled: a sibling's call may be reading the old one.
                _extensionsField.SetValue(_extensions, new Dictionary<string, string>(_extensionItems, _extensionItems.Comparer));
            }
        }
    }
}
