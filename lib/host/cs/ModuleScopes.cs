// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the script scopes of the
// modules a worker runspace had when startup ended. The reset's variable, function and module tables
// are the global scope's; a call can also write inside a startup module
// (`& (Get-Module M) { $script:x = 1; function script:Helper { } }`), and the module's own functions
// then see it in every later call. Restore() puts back the variables of those scopes; RetireReason()
// names a change to their functions or aliases, which retires the process (docs/runspaces.md).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Management.Automation;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>The script scopes of one worker's startup modules.</summary>
    public sealed class ModuleScopes
    {
        private sealed class Saved
        {
            public string Module;
            public Dictionary<string, PSVariable> VariableTable;
            public Dictionary<string, PSVariable> Variables;
            public Dictionary<string, object> Values;
            public Dictionary<string, ScopedItemOptions> Options;
            public IDictionary FunctionTable;
            public Dictionary<object, object> Functions;
            public object Scope;
            public PropertyInfo AliasTable;
            public List<object> Aliases;
        }

        private readonly List<Saved> _scopes = new List<Saved>();
        private string _retire;

        /// <summary>
        /// The scopes now of the script modules in the module table of <paramref name="state"/>. Throws
        /// <see cref="MissingMemberException"/> when this engine build lacks one of the members.
        /// </summary>
        public ModuleScopes(SessionState state)
        {
            PropertyInfo internalOf = EngineMembers.Require(EngineMembers.SessionStateInternal, "Internal");
            object internalState = internalOf.GetValue(state);
            IDictionary modules = (IDictionary)EngineMembers.Require(EngineMembers.ModuleTable, "ModuleTable").GetValue(internalState);
            foreach (object item in modules.Values)
            {
                PSModuleInfo module = item as PSModuleInfo;
                if (module == null || module.SessionState == null) continue;
                object moduleState = internalOf.GetValue(module.SessionState);
                object scope = EngineMembers.Require(EngineMembers.ModuleScope, "ModuleScope").GetValue(moduleState);
                Saved saved = new Saved();
                saved.Module = module.Name;
                saved.Scope = scope;
                saved.VariableTable = (Dictionary<string, PSVariable>)EngineMembers.Require(EngineMembers.ScopeVariables, "Variables").GetValue(scope);
                saved.Variables = new Dictionary<string, PSVariable>(saved.VariableTable, saved.VariableTable.Comparer);
                saved.Values = new Dictionary<string, object>(StringComparer.OrdinalIgnoreCase);
                saved.Options = new Dictionary<string, ScopedItemOptions>(StringComparer.OrdinalIgnoreCase);
                foreach (KeyValuePair<string, PSVariable> entry in saved.Variables)
                {
                    saved.Values[entry.Key] = entry.Value.Value;
                    saved.Options[entry.Key] = entry.Value.Options;
                }
                saved.FunctionTable = (IDictionary)EngineMembers.Require(EngineMembers.ScopeFunctions, "FunctionTable").GetValue(scope);
                saved.Functions = Functions(saved.FunctionTable);
                saved.AliasTable = EngineMembers.Require(EngineMembers.ScopeAliases, "AliasTable");
                saved.Aliases = Aliases(saved);
                _scopes.Add(saved);
            }
        }

        private static Dictionary<object, object> Functions(IDictionary table)
        {
            Dictionary<object, object> functions = new Dictionary<object, object>();
            foreach (DictionaryEntry entry in table)
            {
                FunctionInfo function = entry.Value as FunctionInfo;
                functions[entry.Key] = function != null ? (object)function.ScriptBlock : entry.Value;
            }
            return functions;
        }

        private static List<object> Aliases(Saved saved)
        {
            List<object> aliases = new List<object>();
            foreach (AliasInfo alias in (IEnumerable)saved.AliasTable.GetValue(saved.Scope)) { aliases.Add(alias.Name); aliases.Add(alias.Definition); aliases.Add(alias.Options); }
            return aliases;
        }

        /// <summary>
        /// Adds the value of every variable of the module scopes to <paramref name="roots"/>, named
        /// "$script:Name (module M)": the objects they hold are kept to their items (StartupObjects).
        /// </summary>
        public void AddValuesTo(IDictionary roots)
        {
            foreach (Saved saved in _scopes)
            {
                foreach (KeyValuePair<string, object> entry in saved.Values) roots["$script:" + entry.Key + " (module " + saved.Module + ")"] = entry.Value;
            }
        }

        /// <summary>
        /// Puts back the variables of each module scope: ones a call added are removed, replaced or removed
        /// ones put back, changed values set back. A change it cannot undo (a variable's options, a
        /// ReadOnly or Constant value) is kept for <see cref="RetireReason"/>.
        /// </summary>
        public void Restore()
        {
            foreach (Saved saved in _scopes)
            {
                Dictionary<string, PSVariable> table = saved.VariableTable;
                List<string> added = null;
                foreach (string name in table.Keys)
                {
                    if (!saved.Variables.ContainsKey(name)) (added ??= new List<string>()).Add(name);
                }
                if (added != null) foreach (string name in added) table.Remove(name);
                foreach (KeyValuePair<string, PSVariable> entry in saved.Variables)
                {
                    PSVariable variable = entry.Value;
                    PSVariable current;
                    if (!table.TryGetValue(entry.Key, out current) || !ReferenceEquals(current, variable)) table[entry.Key] = variable;
                    object value = saved.Values[entry.Key];
                    object now = variable.Value;
                    bool same = ReferenceEquals(now, value) || (now != null && (now is string || now is ValueType) && now.Equals(value));
                    if (variable.Options != saved.Options[entry.Key]) { _retire ??= "a call changed the options of variable '" + entry.Key + "' in module '" + saved.Module + "'"; continue; }
                    if (same) continue;
                    if ((variable.Options & (ScopedItemOptions.ReadOnly | ScopedItemOptions.Constant)) != 0) { _retire ??= "a call changed ReadOnly variable '" + entry.Key + "' in module '" + saved.Module + "'"; continue; }
                    variable.Value = value;
                }
            }
        }

        /// <summary>Why the module scopes cannot be returned to their state, or null.</summary>
        public string RetireReason()
        {
            if (_retire != null) return _retire;
            foreach (Saved saved in _scopes)
            {
                Dictionary<object, object> now = Functions(saved.FunctionTable);
                bool same = now.Count == saved.Functions.Count;
                if (same)
                {
                    foreach (KeyValuePair<object, object> entry in now)
                    {
                        object old;
                        if (!saved.Functions.TryGetValue(entry.Key, out old) || !ReferenceEquals(old, entry.Value)) { same = false; break; }
                    }
                }
                if (!same) return "a call changed the functions of module '" + saved.Module + "'";
                List<object> aliases = Aliases(saved);
                same = aliases.Count == saved.Aliases.Count;
                for (int i = 0; same && i < aliases.Count; i++) same = Equals(aliases[i], saved.Aliases[i]);
                if (!same) return "a call changed the aliases of module '" + saved.Module + "'";
            }
            return null;
        }
    }
}
