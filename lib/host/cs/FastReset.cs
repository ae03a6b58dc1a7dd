// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the reset's fast path
// (protocol §4.5). Most calls change nothing a reset restores; when the state's fingerprint equals
// the clean one, clearing $Error and putting the process-wide state back (ProcessState.cs) is the whole reset. Otherwise the
// host script's full path (lib/host/reset.ps1) runs, and tells this object the new clean state.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Diagnostics;
using System.Management.Automation;

namespace Svc.Host
{
    /// <summary>The fast path of one worker's reset.</summary>
    public sealed class FastReset
    {
        private readonly StateFingerprint _fingerprint;
        private readonly SessionState _state;
        private readonly ProcessState _process;
        private List<object> _clean;

        /// <summary>
        /// The fast path for the worker whose global session state is <paramref name="state"/>; the state
        /// now is the clean one. <paramref name="process"/> is the process-wide state resets put back.
        /// </summary>
        public FastReset(StateFingerprint fingerprint, SessionState state, ProcessState process)
        {
            _fingerprint = fingerprint;
            _state = state;
            _process = process;
            _clean = fingerprint.Take();
        }

        /// <summary>Records the state now as the clean one (after a full reset).</summary>
        public void SaveClean()
        {
            _clean = _fingerprint.Take();
        }

        /// <summary>
        /// Resets the worker when nothing but $Error and the environment can have changed, and returns
        /// the reset's result (<c>durationMs</c>, <c>path</c> "fast", <c>spans</c>); null, having changed
        /// nothing, when the full path is needed. A fingerprint that cannot be read counts as changed.
        /// </summary>
        public OrderedDictionary TryReset()
        {
            Stopwatch watch = Stopwatch.StartNew();
            bool unchanged;
            try { unchanged = _fingerprint.Matches(_clean); } catch (Exception) { unchanged = false; }
            if (!unchanged) return null;
            // Where the time goes, per step, for the profile in bench/ (ms, cumulative).
            OrderedDictionary spans = new OrderedDictionary();
            spans["check"] = watch.Elapsed.TotalMilliseconds;
            IList errors = _state.PSVariable.GetValue("Error") as IList;
            if (errors != null && errors.Count > 0) errors.Clear();
            _process.Restore();
            spans["environment"] = watch.Elapsed.TotalMilliseconds;
            OrderedDictionary result = new OrderedDictionary();
            result["durationMs"] = watch.ElapsedMilliseconds;
            result["path"] = "fast";
            result["spans"] = spans;
            return result;
        }
    }
}
