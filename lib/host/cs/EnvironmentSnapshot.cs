// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the process environment as it
// was after startup, put back by every reset (lib/host/reset.ps1).
using System;
using System.Collections;
using System.Collections.Generic;

namespace Svc.Host
{
    /// <summary>The process's environment variables at one moment.</summary>
    public sealed class EnvironmentSnapshot
    {
        private readonly Dictionary<string, string> _variables;

        private EnvironmentSnapshot(Dictionary<string, string> variables)
        {
            _variables = variables;
        }

        /// <summary>The environment now. Names compare as the platform compares them.</summary>
        public static EnvironmentSnapshot Take()
        {
            StringComparer comparer = OperatingSystem.IsWindows() ? StringComparer.OrdinalIgnoreCase : StringComparer.Ordinal;
            Dictionary<string, string> variables = new Dictionary<string, string>(comparer);
            foreach (DictionaryEntry entry in Environment.GetEnvironmentVariables())
            {
                string name = (string)entry.Key;
                // Windows keeps per-drive directories as '=C:' entries, which cannot be set by name.
                if (!name.StartsWith("=", StringComparison.Ordinal)) variables[name] = (string)entry.Value;
            }
            return new EnvironmentSnapshot(variables);
        }

        /// <summary>Removes the variables added since, and sets the changed and removed ones back.</summary>
        public void Restore()
        {
            // Runs twice per call (before its response and in its reset): the common case, nothing
            // changed, is told from the runtime's one copy without building a second table.
            if (Unchanged(Environment.GetEnvironmentVariables())) return;
            EnvironmentSnapshot now = Take();
            foreach (string name in now._variables.Keys)
            {
                if (!_variables.ContainsKey(name)) Environment.SetEnvironmentVariable(name, null);
            }
            foreach (KeyValuePair<string, string> entry in _variables)
            {
                string current;
                if (!now._variables.TryGetValue(entry.Key, out current) || !string.Equals(current, entry.Value, StringComparison.Ordinal))
                {
                    Environment.SetEnvironmentVariable(entry.Key, entry.Value);
                }
            }
        }

        // True when `now` holds exactly the saved variables with their values.
        private bool Unchanged(IDictionary now)
        {
            if (now.Count != _variables.Count) return false;
            foreach (DictionaryEntry entry in now)
            {
                string value;
                if (!_variables.TryGetValue((string)entry.Key, out value) || !string.Equals(value, entry.Value as string, StringComparison.Ordinal)) return false;
            }
            return true;
        }
    }
}
