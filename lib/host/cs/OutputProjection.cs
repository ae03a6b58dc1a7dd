// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): shapes output objects for a
// model before they are encoded. An object is reduced to the properties PowerShell itself would
// show: the requested ones, else its DefaultDisplayPropertySet, else the columns of its first table
// or list view in the format data (read by lib/host/projection.ps1); without either it stays whole.
// What was left out is reported.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Text.RegularExpressions;

namespace Svc.Host
{
    /// <summary>The projection of one slot's output (protocol §4.4, <c>select</c>).</summary>
    public sealed class OutputProjection
    {
        private static readonly Regex AnsiEscape = new Regex("\\x1b\\[[0-9;?]*[ -/]*[@-~]", RegexOptions.Compiled | RegexOptions.CultureInvariant);
        private readonly ScriptBlock _viewNames;
        private readonly Dictionary<string, string[]> _views = new Dictionary<string, string[]>(StringComparer.Ordinal);
        private readonly HashSet<string> _prepared = new HashSet<string>(StringComparer.OrdinalIgnoreCase);

        /// <summary>
        /// <paramref name="viewNames"/> is called with a type chain (string[]) and returns the property
        /// names of its first table or list view, or none; its answer is kept per chain.
        /// </summary>
        public OutputProjection(ScriptBlock viewNames)
        {
            _viewNames = viewNames;
        }

        /// <summary>
        /// A pass over <paramref name="run"/>'s items for its <c>select</c> (<c>properties</c>: names or
        /// wildcards; <c>display</c>: use the display sets). Items are projected one by one as they are
        /// encoded, so those past what svc keeps are never projected; <see cref="Pass.Finish"/> gives
        /// the run its report. Reads properties, so call it from a scope without strict mode (type-data
        /// members are written for non-strict code).
        /// </summary>
        public Pass Begin(Invocation run)
        {
            return new Pass(this, run);
        }

        /// <summary>
        /// Looks up, once per command name, the views of the types <paramref name="command"/> declares
        /// it writes ([OutputType]), while <paramref name="worker"/> is idle: a pass may then project
        /// them as the command writes them, when no lookup can run (<see cref="Pass.TryProject"/>).
        /// Best effort: a name or type that cannot be resolved is skipped.
        /// </summary>
        public void Prepare(Runspace worker, string command)
        {
            if (!_prepared.Add(command)) return;
            try
            {
                CommandInfo info = worker.SessionStateProxy.InvokeCommand.GetCommand(command, CommandTypes.All);
                if (info == null) return;
                foreach (PSTypeName declared in info.OutputType)
                {
                    Type type = declared.Type;
                    if (type == null || typeof(string) == type || type.IsValueType || typeof(IEnumerable).IsAssignableFrom(type)) continue;
                    List<string> chain = new List<string>();
                    for (Type t = type; t != null; t = t.BaseType) chain.Add(t.FullName);
                    string[] ignored;
                    TryViewNames(chain.ToArray(), true, out ignored);
                }
            }
            catch (Exception)
            {
                // Only an optimization: the output is projected when the command has ended instead.
            }
        }

        /// <summary>One call's projection: the items projected so far and what they showed and left out.</summary>
        public sealed class Pass
        {
            private readonly OutputProjection _owner;
            private readonly Invocation _run;
            private readonly object[] _requested;
            private readonly bool _display;
            private readonly OrderedDictionary _types = new OrderedDictionary(StringComparer.Ordinal);
            private readonly HashSet<string> _matched = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
            private readonly WildcardPattern[] _patterns;

            internal Pass(OutputProjection owner, Invocation run)
            {
                _owner = owner;
                _run = run;
                _requested = AsList(run.Select["properties"]);
                _display = LanguagePrimitives.IsTrue(run.Select["display"]);
                _patterns = new WildcardPattern[_requested.Length];
                for (int i = 0; i < _requested.Length; i++) _patterns[i] = WildcardPattern.Get(Text(_requested[i]), WildcardOptions.IgnoreCase);
            }

            /// <summary>
            /// The item to encode in place of <paramref name="item"/>, in <paramref name="projected"/>.
            /// False, projecting nothing, when that needs the format data of a type chain not looked up
            /// yet and <paramref name="mayLookUp"/> is false: the lookup runs a pipeline in the worker
            /// runspace, which cannot happen while the command runs there.
            /// </summary>
            public bool TryProject(object item, bool mayLookUp, out object projected)
            {
                projected = item;
                if (item == null) return true;
                // Values without properties worth choosing from are encoded whole.
                PSObject wrapped = PSObject.AsPSObject(item);
                object baseObject = wrapped.BaseObject;
                if (baseObject is string || baseObject is ValueType || baseObject is IEnumerable) return true;
                PSMemberInfoCollection<PSPropertyInfo> properties = null;
                IList<string> names = null;
                if (_requested.Length > 0)
                {
                    properties = wrapped.Properties;
                    List<string> chosen = new List<string>();
                    for (int i = 0; i < _patterns.Length; i++)
                    {
                        foreach (PSPropertyInfo property in properties)
                        {
                            if (!_patterns[i].IsMatch(property.Name)) continue;
                            _matched.Add(Text(_requested[i]));
                            if (!chosen.Contains(property.Name)) chosen.Add(property.Name);
                        }
                    }
                    names = chosen;
                }
                else if (_display)
                {
                    if (!_owner.TryDisplayNames(wrapped, mayLookUp, out names)) return false;
                }
                if (names == null) return true;
                if (properties == null) properties = wrapped.Properties;
                OrderedDictionary shown = new OrderedDictionary(StringComparer.OrdinalIgnoreCase);
                foreach (string name in names)
                {
                    PSPropertyInfo property = properties[name];
                    if (property == null) continue;
                    object value;
                    // A getter that throws (Process.StartTime of another user's process) shows as null.
                    try { value = property.Value; } catch (Exception) { value = null; }
                    // Display properties such as FileSystemInfo.NameString carry colour even when
                    // $PSStyle.OutputRendering is PlainText; a model reads the escape codes as noise.
                    string text = value as string;
                    if (text != null && text.IndexOf('\x1b') >= 0) value = AnsiEscape.Replace(text, "");
                    shown[property.Name] = value;
                }
                string typeName = wrapped.TypeNames.Count > 0 ? wrapped.TypeNames[0] : baseObject.GetType().FullName;
                // Under svc's limits the report names a bounded number of types and names (CallLimits).
                bool bounded = _run.Limits != null;
                if (!_types.Contains(typeName) && !(bounded && _types.Count >= CallLimits.ShapeTypes))
                {
                    List<string> omitted = new List<string>();
                    foreach (PSPropertyInfo property in properties) { if (!shown.Contains(property.Name)) omitted.Add(property.Name); }
                    string[] shownNames = new string[shown.Count];
                    shown.Keys.CopyTo(shownNames, 0);
                    string[] omittedNames = omitted.ToArray();
                    OrderedDictionary entry = new OrderedDictionary();
                    entry["type"] = bounded ? TextCut.CutMiddle(typeName, CallLimits.NameBytes) : typeName;
                    entry["shown"] = bounded ? CallLimits.Names(shownNames) : shownNames;
                    entry["omitted"] = bounded ? CallLimits.Names(omittedNames) : omittedNames;
                    if (bounded && omittedNames.Length > CallLimits.ShapeNames) entry["omittedCount"] = omittedNames.Length;
                    _types[typeName] = entry;
                }
                projected = shown;
                return true;
            }

            /// <summary>Gives the run its report: per type what was shown and left out, and the requested names that matched nothing.</summary>
            public void Finish()
            {
                List<string> unmatched = new List<string>();
                foreach (object pattern in _requested) { if (!_matched.Contains(Text(pattern))) unmatched.Add(Text(pattern)); }
                object[] typeList = new object[_types.Count];
                _types.Values.CopyTo(typeList, 0);
                string[] unknown = unmatched.ToArray();
                _run.SetProjectionReport(typeList, _run.Limits != null ? CallLimits.Names(unknown) : unknown);
            }
        }

        // What PowerShell would show: the DefaultDisplayPropertySet, else the columns of the type's
        // first table or list view (kept per type chain), else everything (null). False when the view
        // is not known yet and may not be looked up now.
        internal bool TryDisplayNames(PSObject wrapped, bool mayLookUp, out IList<string> shown)
        {
            shown = null;
            PSMemberSet standard = wrapped.Members["PSStandardMembers"] as PSMemberSet;
            PSPropertySet set = standard != null ? standard.Members["DefaultDisplayPropertySet"] as PSPropertySet : null;
            if (set != null && set.ReferencedPropertyNames.Count > 0)
            {
                shown = set.ReferencedPropertyNames;
                return true;
            }
            string[] chain = new string[wrapped.TypeNames.Count];
            wrapped.TypeNames.CopyTo(chain, 0);
            string[] names;
            if (!TryViewNames(chain, mayLookUp, out names)) return false;
            if (names.Length > 0) shown = names;
            return true;
        }

        // The columns of the first table or list view of a type chain (kept per chain); false when
        // they are not known yet and may not be looked up now.
        private bool TryViewNames(string[] chain, bool mayLookUp, out string[] names)
        {
            string key = string.Join("|", chain);
            if (_views.TryGetValue(key, out names)) return true;
            if (!mayLookUp) return false;
            object answer = _viewNames.InvokeReturnAsIs(new object[] { chain });
            names = LanguagePrimitives.ConvertTo<string[]>(answer) ?? new string[0];
            _views[key] = names;
            return true;
        }

        // JSON null or absent -> no items; a scalar -> one.
        private static object[] AsList(object value)
        {
            if (value == null) return new object[0];
            object[] items = value as object[];
            return items ?? new object[] { value };
        }

        private static string Text(object value)
        {
            return LanguagePrimitives.ConvertTo<string>(value) ?? "";
        }
    }
}
