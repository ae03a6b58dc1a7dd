// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): shapes output objects for a
// model before they are encoded. An object is reduced to what PowerShell itself would show: the
// requested properties or view columns, else the columns of its type's first table or list view in
// the format data (read by lib/host/projection.ps1) with the view's group-by, else its
// DefaultDisplayPropertySet; then an identity property (FullName, else Id) when it has one. Without a
// view or a display set it stays whole. What was left out is reported.
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
        // Kept in a display projection when the object has one and the view did not show it: the first
        // of these names that is a property with a single JSON value.
        private static readonly string[] IdentityNames = { "FullName", "Id" };
        private readonly ScriptBlock _viewOf;
        private readonly Runspace _worker;
        // Type chains looked up in the format data: a call may look up so many new ones (each a
        // Get-FormatData in the worker, a few ms), and the slot keeps so many.
        private const int LookupsPerCall = 64;
        private const int KeptViews = 4096;
        private readonly Dictionary<string, View> _views = new Dictionary<string, View>(StringComparer.Ordinal);
        private readonly HashSet<string> _prepared = new HashSet<string>(StringComparer.OrdinalIgnoreCase);

        /// <summary>
        /// <paramref name="viewOf"/> is called with a type chain (string[]) and returns its first table
        /// or list view as projection.ps1 describes it (a hashtable of <c>columns</c> and
        /// <c>groupBy</c>), or null; its answer is kept per chain. Script-block columns run in
        /// <paramref name="worker"/>, the runspace calls run in.
        /// </summary>
        public OutputProjection(ScriptBlock viewOf, Runspace worker)
        {
            _viewOf = viewOf;
            _worker = worker;
        }

        /// <summary>
        /// A pass over <paramref name="run"/>'s output for its <c>select</c> (<c>properties</c>: names or
        /// wildcards; <c>display</c>: what PowerShell shows). Items are projected one by one as they are
        /// encoded, so those past what svc keeps are never projected (script-block columns are computed
        /// a batch ahead, among the items held until the command's end); <see cref="Pass.Finish"/> gives
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
                int lookups = 0;
                foreach (PSTypeName declared in info.OutputType)
                {
                    Type type = declared.Type;
                    if (type == null || typeof(string) == type || type.IsValueType || typeof(IEnumerable).IsAssignableFrom(type)) continue;
                    List<string> chain = new List<string>();
                    for (Type t = type; t != null; t = t.BaseType) chain.Add(t.FullName);
                    View ignored;
                    TryViewOf(chain.ToArray(), true, ref lookups, out ignored);
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
            // The items held until the command's end (Hold), and where the next one to project is.
            private PSObject[] _held;
            private int _cursor;
            private readonly object[] _requested;
            private readonly bool _display;
            private readonly OrderedDictionary _types = new OrderedDictionary(StringComparer.Ordinal);
            private readonly HashSet<string> _matched = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
            private readonly WildcardPattern[] _patterns;
            // Script-block values computed ahead, by item index; taken as each item is projected.
            private readonly Dictionary<int, ComputedColumns.Job> _jobs = new Dictionary<int, ComputedColumns.Job>();
            private ComputedColumns _computed;
            private int _uncomputed;
            private int _lookups;
            // Type chains whose view was not known while the command ran, projected without it for
            // the whole pass (see TrySelection); their views are looked up as the pass ends.
            private readonly Dictionary<string, string[]> _withoutView = new Dictionary<string, string[]>(StringComparer.Ordinal);

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
            /// The items held until the command's end, which the output gets in this order; script-block
            /// columns are computed among them a batch ahead.
            /// </summary>
            public void Hold(PSObject[] items)
            {
                _held = items;
                _cursor = 0;
            }

            /// <summary>
            /// The item to encode in place of <paramref name="item"/>, in <paramref name="projected"/>.
            /// False, projecting nothing, when that needs the worker runspace and <paramref name="mayLookUp"/>
            /// is false (the command still runs there): the format data of a type chain not looked up
            /// yet, or a script-block column.
            /// </summary>
            public bool TryProject(object item, bool mayLookUp, out object projected)
            {
                projected = item;
                PSObject wrapped = Projectable(item);
                if (wrapped == null) return true;
                View view;
                List<object> selection;
                if (!TrySelection(wrapped, mayLookUp, out view, out selection)) return false;
                if (selection == null) return true;
                PSMemberInfoCollection<PSPropertyInfo> properties = wrapped.Properties;
                if (!mayLookUp && view != null && view.HasScripts && Plan(properties, view, selection) != null) return false;
                OrderedDictionary shown = new OrderedDictionary(StringComparer.OrdinalIgnoreCase);
                ComputedColumns.Job job = null;
                bool planned = false;
                foreach (object entry in selection)
                {
                    ViewColumn column = entry as ViewColumn;
                    if (column == null)
                    {
                        PSPropertyInfo property = properties[(string)entry];
                        if (property != null && !shown.Contains(property.Name)) shown[property.Name] = Clean(Read(property));
                        continue;
                    }
                    if (shown.Contains(column.Name)) continue;
                    object value;
                    if (!TryRaw(properties, column, out value))
                    {
                        if (column.Property != null)
                        {
                            PSPropertyInfo property = properties[column.Property];
                            value = property != null ? Read(property) : null;
                        }
                        else
                        {
                            if (!planned)
                            {
                                job = JobFor(wrapped, view, selection);
                                planned = true;
                            }
                            value = job != null ? job.Values[column.Index] : null;
                        }
                    }
                    if (column.ParentPath) value = WithoutProvider(value);
                    shown[column.Name] = Clean(value);
                }
                if (_requested.Length == 0) AddIdentity(shown, properties);
                Report(wrapped, shown, properties);
                projected = shown;
                return true;
            }

            /// <summary>Gives the run its report: per type what was shown and left out, requested names that matched nothing, and items whose computed columns the time bound left null.</summary>
            public void Finish()
            {
                // The command has ended: the views it could not wait for are looked up for later calls.
                foreach (string[] chain in _withoutView.Values)
                {
                    View ignored;
                    _owner.TryViewOf(chain, true, ref _lookups, out ignored);
                }
                List<string> unmatched = new List<string>();
                foreach (object pattern in _requested) { if (!_matched.Contains(Text(pattern))) unmatched.Add(Text(pattern)); }
                object[] typeList = new object[_types.Count];
                _types.Values.CopyTo(typeList, 0);
                string[] unknown = unmatched.ToArray();
                _run.SetProjectionReport(typeList, _run.Limits != null ? CallLimits.Names(unknown) : unknown, _uncomputed);
            }

            // What to show of the item, in order: view columns and property names; null to keep it whole.
            // Requested names match the view's columns (what the report called them), then properties.
            // False when the view is not known yet and may not be looked up now.
            // While the command runs, a chain whose view is not known yet is projected without it when
            // that needs no guess (its display set; requested names that all match properties), so a
            // read-only command can still be stopped once its output is full; the rest of the pass
            // keeps to that, so one call's items share one shape. Else the item waits for the end.
            private bool TrySelection(PSObject wrapped, bool mayLookUp, out View view, out List<object> selection)
            {
                selection = null;
                string[] chain = new string[wrapped.TypeNames.Count];
                wrapped.TypeNames.CopyTo(chain, 0);
                string key = string.Join("|", chain);
                bool complete;
                if (_withoutView.ContainsKey(key))
                {
                    view = null;
                    selection = Selection(wrapped, null, out complete);
                    return true;
                }
                if (_owner.TryViewOf(chain, mayLookUp, ref _lookups, out view))
                {
                    selection = Selection(wrapped, view, out complete);
                    return true;
                }
                List<object> provisional = Selection(wrapped, null, out complete);
                if (provisional == null || !complete) return false;
                _withoutView[key] = chain;
                selection = provisional;
                return true;
            }

            // `complete`: every requested name matched a column or property of this item.
            private List<object> Selection(PSObject wrapped, View view, out bool complete)
            {
                complete = true;
                List<object> selection = new List<object>();
                if (_requested.Length > 0)
                {
                    PSMemberInfoCollection<PSPropertyInfo> properties = wrapped.Properties;
                    for (int i = 0; i < _patterns.Length; i++)
                    {
                        bool matched = false;
                        if (view != null)
                        {
                            foreach (ViewColumn column in view.Columns)
                            {
                                if (!_patterns[i].IsMatch(column.Name)) continue;
                                matched = true;
                                selection.Add(column);
                            }
                        }
                        foreach (PSPropertyInfo property in properties)
                        {
                            if (!_patterns[i].IsMatch(property.Name)) continue;
                            matched = true;
                            selection.Add(property.Name);
                        }
                        if (matched) _matched.Add(Text(_requested[i]));
                        else complete = false;
                    }
                    return selection;
                }
                if (!_display) return null;
                if (view != null)
                {
                    selection.AddRange(view.Columns);
                    return selection;
                }
                PSMemberSet standard = wrapped.Members["PSStandardMembers"] as PSMemberSet;
                PSPropertySet set = standard != null ? standard.Members["DefaultDisplayPropertySet"] as PSPropertySet : null;
                if (set == null || set.ReferencedPropertyNames.Count == 0) return null;
                selection.AddRange(set.ReferencedPropertyNames);
                return selection;
            }

            // The computed values of the item, computing a batch from it on when they are not yet: the
            // held items after it that are projected with script-block columns too, as many as were
            // held before it (16 to 1024), so no more than half of the work goes to items past what svc
            // keeps. Null when the item needs no script or the time bound was reached.
            private ComputedColumns.Job JobFor(PSObject wrapped, View view, List<object> selection)
            {
                int index = -1;
                if (_held != null)
                {
                    for (int i = _cursor; i < _held.Length; i++)
                    {
                        if (!ReferenceEquals(_held[i], wrapped)) continue;
                        index = i;
                        _cursor = i + 1;
                        break;
                    }
                }
                ComputedColumns.Job job;
                if (index >= 0 && _jobs.TryGetValue(index, out job))
                {
                    _jobs.Remove(index);
                    if (!job.Done) _uncomputed++;
                    return job;
                }
                string[] scripts = Plan(wrapped.Properties, view, selection);
                if (scripts == null) return null;
                if (_computed != null && _computed.OutOfTime)
                {
                    _uncomputed++;
                    return null;
                }
                job = new ComputedColumns.Job(wrapped, scripts);
                List<ComputedColumns.Job> batch = new List<ComputedColumns.Job> { job };
                int last = index < 0 ? -1 : Math.Min(_held.Length - 1, index + Math.Min(Math.Max(index, 16), 1024));
                for (int i = index + 1; i <= last; i++)
                {
                    PSObject next = Projectable(_held[i]);
                    if (next == null || _jobs.ContainsKey(i)) continue;
                    View nextView;
                    List<object> nextSelection;
                    if (!TrySelection(next, true, out nextView, out nextSelection)) continue;
                    string[] nextScripts = nextSelection != null && nextView != null && nextView.HasScripts ? Plan(next.Properties, nextView, nextSelection) : null;
                    if (nextScripts == null) continue;
                    ComputedColumns.Job ahead = new ComputedColumns.Job(next, nextScripts);
                    _jobs[i] = ahead;
                    batch.Add(ahead);
                }
                if (_computed == null) _computed = new ComputedColumns(_owner._worker);
                _computed.Compute(batch);
                if (!job.Done) _uncomputed++;
                return job;
            }

            // Per column of the view, the script to run for this item, or null; null when none is needed.
            private static string[] Plan(PSMemberInfoCollection<PSPropertyInfo> properties, View view, List<object> selection)
            {
                string[] scripts = null;
                foreach (object entry in selection)
                {
                    ViewColumn column = entry as ViewColumn;
                    if (column == null || column.Script == null) continue;
                    object raw;
                    if (TryRaw(properties, column, out raw)) continue;
                    if (scripts == null) scripts = new string[view.Columns.Length];
                    scripts[column.Index] = column.Script;
                }
                return scripts;
            }

            private void Report(PSObject wrapped, OrderedDictionary shown, PSMemberInfoCollection<PSPropertyInfo> properties)
            {
                string typeName = wrapped.TypeNames.Count > 0 ? wrapped.TypeNames[0] : wrapped.BaseObject.GetType().FullName;
                // Under svc's limits the report names a bounded number of types and names (CallLimits).
                bool bounded = _run.Limits != null;
                if (_types.Contains(typeName) || (bounded && _types.Count >= CallLimits.ShapeTypes)) return;
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
        }

        // The first table or list view of a type chain (kept per chain), or null; false when it is not
        // known yet and may not be looked up now. A chain not kept yet is looked up while the call has
        // made fewer than LookupsPerCall lookups (else it has none): output of thousands of made-up
        // type names must not cost thousands of Get-FormatData runs.
        internal bool TryViewOf(string[] chain, bool mayLookUp, ref int lookups, out View view)
        {
            string key = string.Join("|", chain);
            if (_views.TryGetValue(key, out view)) return true;
            if (!mayLookUp) return false;
            if (lookups >= LookupsPerCall) return true;
            lookups++;
            view = View.From(_viewOf.InvokeReturnAsIs(new object[] { chain }));
            if (_views.Count >= KeptViews) _views.Clear();
            _views[key] = view;
            return true;
        }

        // The object to project, or null for values without properties worth choosing from (encoded whole).
        private static PSObject Projectable(object item)
        {
            if (item == null) return null;
            PSObject wrapped = PSObject.AsPSObject(item);
            object baseObject = wrapped.BaseObject;
            if (baseObject is string || baseObject is ValueType || baseObject is IEnumerable) return null;
            return wrapped;
        }

        // A column that shows the property of its own name, only formatted for a console (Name from
        // NameString, LastWriteTime through a script over $_.LastWriteTime), carries that property's
        // value when it is one JSON value: typed, and the same for every type the view covers.
        private static bool TryRaw(PSMemberInfoCollection<PSPropertyInfo> properties, ViewColumn column, out object value)
        {
            value = null;
            if (!column.Reformats) return false;
            PSPropertyInfo property = properties[column.Name];
            if (property == null) return false;
            value = Read(property);
            return IsSingleValue(value);
        }

        // Keeps the first identity property the object has, unless the view showed it already.
        private static void AddIdentity(OrderedDictionary shown, PSMemberInfoCollection<PSPropertyInfo> properties)
        {
            foreach (string name in IdentityNames)
            {
                if (shown.Contains(name)) return;
                PSPropertyInfo property = properties[name];
                if (property == null) continue;
                object value = Read(property);
                if (value == null || !IsSingleValue(value)) continue;
                shown[property.Name] = Clean(value);
                return;
            }
        }

        // A value JSON writes as one string, number or boolean (dates, enums and GUIDs as strings).
        private static bool IsSingleValue(object value)
        {
            if (value == null) return true;
            object bare = value is PSObject ? ((PSObject)value).BaseObject : value;
            return bare is string || bare is char || bare is bool || bare is decimal || bare is DateTime || bare is DateTimeOffset ||
                bare is Guid || bare is Enum || (bare.GetType().IsPrimitive && !(bare is IntPtr) && !(bare is UIntPtr));
        }

        // A getter that throws (Process.StartTime of another user's process) shows as null.
        private static object Read(PSPropertyInfo property)
        {
            try { return property.Value; } catch (Exception) { return null; }
        }

        // Display properties such as FileSystemInfo.NameString carry colour even when
        // $PSStyle.OutputRendering is PlainText; a model reads the escape codes as noise.
        private static object Clean(object value)
        {
            string text = value is PSObject ? ((PSObject)value).BaseObject as string : value as string;
            if (text != null && text.IndexOf('\x1b') >= 0) return AnsiEscape.Replace(text, "");
            return value;
        }

        // PSParentPath without its provider ("Microsoft.PowerShell.Core\FileSystem::/tmp" -> "/tmp").
        private static object WithoutProvider(object value)
        {
            string text = value is PSObject ? ((PSObject)value).BaseObject as string : value as string;
            if (text == null) return value;
            int mark = text.IndexOf("::", StringComparison.Ordinal);
            return mark >= 0 ? text.Substring(mark + 2) : text;
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

        /// <summary>A format view as projected: its group-by first (when it has one), then its columns.</summary>
        internal sealed class View
        {
            internal ViewColumn[] Columns;
            // Some column is a script block.
            internal bool HasScripts;

            // The view projection.ps1 described, or null for none.
            internal static View From(object answer)
            {
                Hashtable table = Unwrap(answer) as Hashtable;
                if (table == null) return null;
                List<ViewColumn> columns = new List<ViewColumn>();
                Hashtable groupBy = Unwrap(table["groupBy"]) as Hashtable;
                if (groupBy != null) columns.Add(ViewColumn.From(groupBy, columns.Count));
                foreach (object entry in AsList(Unwrap(table["columns"])))
                {
                    Hashtable column = Unwrap(entry) as Hashtable;
                    if (column != null) columns.Add(ViewColumn.From(column, columns.Count));
                }
                if (columns.Count == 0) return null;
                return new View { Columns = columns.ToArray(), HasScripts = columns.Exists(column => column.Script != null) };
            }

            private static object Unwrap(object value)
            {
                return value is PSObject ? ((PSObject)value).BaseObject : value;
            }
        }

        /// <summary>One column of a view, or its group-by.</summary>
        internal sealed class ViewColumn
        {
            internal int Index;
            // The label, else the property, else the script's text (PowerShell's header).
            internal string Name;
            internal string Property;
            internal string Script;
            // The column shows the property named Name, formatted: a property column, or a script that
            // reads only $_.<Name>.
            internal bool Reformats;
            // The group-by on PSParentPath, shown without its provider.
            internal bool ParentPath;

            internal static ViewColumn From(Hashtable table, int index)
            {
                ViewColumn column = new ViewColumn
                {
                    Index = index,
                    Name = Text(table["name"]),
                    Property = table["property"] as string,
                    Script = table["script"] as string,
                    ParentPath = LanguagePrimitives.IsTrue(table["parentPath"]),
                };
                object[] reads = AsList(table["reads"] is PSObject ? ((PSObject)table["reads"]).BaseObject : table["reads"]);
                column.Reformats = !column.ParentPath && (column.Property != null ||
                    (column.Script != null && reads.Length == 1 && string.Equals(Text(reads[0]), column.Name, StringComparison.OrdinalIgnoreCase)));
                return column;
            }
        }
    }
}
