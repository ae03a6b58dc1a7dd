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
using System.Text.RegularExpressions;

namespace Svc.Host
{
    /// <summary>The projection of one slot's output (protocol §4.4, <c>select</c>).</summary>
    public sealed class OutputProjection
    {
        private static readonly Regex AnsiEscape = new Regex("\\x1b\\[[0-9;?]*[ -/]*[@-~]", RegexOptions.Compiled | RegexOptions.CultureInvariant);
        private readonly ScriptBlock _viewNames;
        private readonly Dictionary<string, string[]> _views = new Dictionary<string, string[]>(StringComparer.Ordinal);

        /// <summary>
        /// <paramref name="viewNames"/> is called with a type chain (string[]) and returns the property
        /// names of its first table or list view, or none; its answer is kept per chain.
        /// </summary>
        public OutputProjection(ScriptBlock viewNames)
        {
            _viewNames = viewNames;
        }

        /// <summary>
        /// The items to encode for <paramref name="run"/>'s <c>select</c> (<c>properties</c>: names or
        /// wildcards; <c>display</c>: use the display sets), with its report given to the run: per type,
        /// the properties shown and the ones left out, and the requested names that matched nothing.
        /// Reads properties, so call it from a scope without strict mode (type-data members are written
        /// for non-strict code).
        /// </summary>
        public IList Apply(Invocation run, IList items)
        {
            Hashtable select = run.Select;
            object[] requested = AsList(select["properties"]);
            bool display = LanguagePrimitives.IsTrue(select["display"]);
            List<object> output = new List<object>(items.Count);
            OrderedDictionary types = new OrderedDictionary(StringComparer.Ordinal);
            HashSet<string> matched = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
            WildcardPattern[] patterns = new WildcardPattern[requested.Length];
            for (int i = 0; i < requested.Length; i++) patterns[i] = WildcardPattern.Get(Text(requested[i]), WildcardOptions.IgnoreCase);

            foreach (object item in items)
            {
                if (item == null) { output.Add(item); continue; }
                // Values without properties worth choosing from are encoded whole.
                PSObject wrapped = PSObject.AsPSObject(item);
                object baseObject = wrapped.BaseObject;
                if (baseObject is string || baseObject is ValueType || baseObject is IEnumerable) { output.Add(item); continue; }
                PSMemberInfoCollection<PSPropertyInfo> properties = null;
                IList<string> names = null;
                if (requested.Length > 0)
                {
                    properties = wrapped.Properties;
                    List<string> chosen = new List<string>();
                    for (int i = 0; i < patterns.Length; i++)
                    {
                        foreach (PSPropertyInfo property in properties)
                        {
                            if (!patterns[i].IsMatch(property.Name)) continue;
                            matched.Add(Text(requested[i]));
                            if (!chosen.Contains(property.Name)) chosen.Add(property.Name);
                        }
                    }
                    names = chosen;
                }
                else if (display)
                {
                    names = DisplayNames(wrapped);
                }
                if (names == null) { output.Add(item); continue; }
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
                output.Add(shown);
                string typeName = wrapped.TypeNames.Count > 0 ? wrapped.TypeNames[0] : baseObject.GetType().FullName;
                if (!types.Contains(typeName))
                {
                    List<string> omitted = new List<string>();
                    foreach (PSPropertyInfo property in properties) { if (!shown.Contains(property.Name)) omitted.Add(property.Name); }
                    string[] shownNames = new string[shown.Count];
                    shown.Keys.CopyTo(shownNames, 0);
                    OrderedDictionary entry = new OrderedDictionary();
                    entry["type"] = typeName;
                    entry["shown"] = shownNames;
                    entry["omitted"] = omitted.ToArray();
                    types[typeName] = entry;
                }
            }
            List<string> unmatched = new List<string>();
            foreach (object pattern in requested) { if (!matched.Contains(Text(pattern))) unmatched.Add(Text(pattern)); }
            object[] typeList = new object[types.Count];
            types.Values.CopyTo(typeList, 0);
            run.SetProjectionReport(typeList, unmatched.ToArray());
            return output;
        }

        // What PowerShell would show: the DefaultDisplayPropertySet, else the columns of the type's
        // first table or list view (kept per type chain), else everything (null).
        private IList<string> DisplayNames(PSObject wrapped)
        {
            PSMemberSet standard = wrapped.Members["PSStandardMembers"] as PSMemberSet;
            PSPropertySet set = standard != null ? standard.Members["DefaultDisplayPropertySet"] as PSPropertySet : null;
            if (set != null && set.ReferencedPropertyNames.Count > 0) return set.ReferencedPropertyNames;
            string[] chain = new string[wrapped.TypeNames.Count];
            wrapped.TypeNames.CopyTo(chain, 0);
            string key = string.Join("|", chain);
            string[] names;
            if (!_views.TryGetValue(key, out names))
            {
                object answer = _viewNames.InvokeReturnAsIs(new object[] { chain });
                names = LanguagePrimitives.ConvertTo<string[]>(answer) ?? new string[0];
                _views[key] = names;
            }
            return names.Length > 0 ? names : null;
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
