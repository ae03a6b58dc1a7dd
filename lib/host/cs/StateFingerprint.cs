// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the fingerprint behind the
// reset's fast path (lib/host/reset.ps1). Most calls change nothing a reset restores, so the host
// compares a fingerprint of that state, read straight from the engine's tables, with the one taken
// when the state was last clean; any difference sends the reset down the full path. The tables are
// internal members, read only while the worker is idle.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>Reads what a reset restores, as plain values and object references.</summary>
    public sealed class StateFingerprint
    {
        private readonly Runspace _worker;
        private readonly SessionState _state;
        private readonly ISet<string> _skipped;
        private readonly object _scope;
        private readonly object _context;
        private readonly IDictionary _variables;
        private readonly IDictionary _functions;
        private readonly PropertyInfo _aliases;
        private readonly PropertyInfo _drives;
        private readonly PropertyInfo _strictMode;
        private readonly IDictionary _modules;
        private readonly PropertyInfo _traceLevel;
        private readonly PropertyInfo _traceStep;
        private readonly JobRepository _jobs;

        /// <summary>
        /// Finds the engine's tables for <paramref name="worker"/>, whose global session state is
        /// <paramref name="state"/>. Variables named in <paramref name="skipped"/> are left out. Throws
        /// <see cref="MissingMemberException"/> when this engine build lacks one of the members.
        /// </summary>
        public StateFingerprint(Runspace worker, SessionState state, ISet<string> skipped)
        {
            _worker = worker;
            _state = state;
            _skipped = skipped;
            object internalState = EngineMembers.Require(EngineMembers.SessionStateInternal, "Internal").GetValue(state);
            _scope = EngineMembers.Require(EngineMembers.GlobalScope, "GlobalScope").GetValue(internalState);
            _context = EngineMembers.Require(EngineMembers.ExecutionContext, "ExecutionContext").GetValue(internalState);
            _variables = (IDictionary)EngineMembers.Require(EngineMembers.ScopeVariables, "Variables").GetValue(_scope);
            _functions = (IDictionary)EngineMembers.Require(EngineMembers.ScopeFunctions, "FunctionTable").GetValue(_scope);
            _aliases = EngineMembers.Require(EngineMembers.ScopeAliases, "AliasTable");
            _drives = EngineMembers.Require(EngineMembers.ScopeDrives, "Drives");
            _strictMode = EngineMembers.Require(EngineMembers.ScopeStrictMode, "StrictModeVersion");
            _modules = (IDictionary)EngineMembers.Require(EngineMembers.ModuleTable, "ModuleTable").GetValue(internalState);
            _traceLevel = EngineMembers.Require(EngineMembers.DebugTraceLevel, "PSDebugTraceLevel");
            _traceStep = EngineMembers.Require(EngineMembers.DebugTraceStep, "PSDebugTraceStep");
            _jobs = (JobRepository)EngineMembers.Require(EngineMembers.JobRepository, "JobRepository").GetValue(worker);
        }

        /// <summary>
        /// The fingerprint now: one pass over each table. The items of the objects variables hold are not
        /// in it: both reset paths have put them back before it is compared (StartupObjects).
        /// </summary>
        public List<object> Take()
        {
            List<object> values = new List<object>(1024);
            foreach (object value in Items()) values.Add(value);
            return values;
        }

        // The fingerprint's values in order, read lazily so a comparison can stop at the first difference.
        private IEnumerable<object> Items()
        {
            foreach (PSVariable variable in _variables.Values)
            {
                if (_skipped.Contains(variable.Name)) continue;
                yield return variable;
                yield return variable.Value;
                yield return variable.Options;
            }
            foreach (FunctionInfo function in _functions.Values) { yield return function; yield return function.ScriptBlock; yield return function.Options; }
            foreach (AliasInfo alias in (IEnumerable)_aliases.GetValue(_scope)) { yield return alias.Name; yield return alias.Definition; yield return alias.Options; }
            foreach (object drive in (IEnumerable)_drives.GetValue(_scope)) yield return drive;
            foreach (object module in _modules.Values) yield return module;
            yield return _state.Path.CurrentLocation.Path;
            yield return _strictMode.GetValue(_scope);
            yield return _traceLevel.GetValue(_context);
            yield return _traceStep.GetValue(_context);
            yield return _jobs.Jobs.Count;
            int subscribers = 0;
            foreach (PSEventSubscriber subscriber in _worker.Events.Subscribers) subscribers++;
            yield return subscribers;
            yield return _worker.Events.ReceivedEvents.Count;
            yield return _worker.Debugger.GetBreakpoints().Count;
        }

        /// <summary>
        /// True when nothing a reset restores differs from <paramref name="clean"/>: the same objects, or
        /// equal strings and value types (which are boxed anew on each read). Stops at the first difference.
        /// </summary>
        public bool Matches(List<object> clean)
        {
            int i = 0;
            foreach (object left in Items())
            {
                if (i >= clean.Count) return false;
                object right = clean[i++];
                if (ReferenceEquals(left, right)) continue;
                if (left == null || right == null) return false;
                if ((left is string || left is ValueType) && left.Equals(right)) continue;
                return false;
            }
            return i == clean.Count;
        }
    }
}
