// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the script-block columns of
// format views (Process's "WS(M)", PSDriveInfo's "Provider"), computed for the projection
// (OutputProjection.cs). They run in the worker runspace, where the call ran and where a module's
// format data expects them, in batches of items (one pipeline per batch: about 0.6 ms a batch and 7 to
// 11 µs a value on a busy 2-core machine, where a pipeline per item cost 0.6 ms an item), and within a
// time bound per call.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Diagnostics;
using System.Management.Automation;
using System.Management.Automation.Runspaces;

namespace Svc.Host
{
    /// <summary>One call's computed columns: batches run in the worker runspace, within <see cref="BudgetMilliseconds"/>.</summary>
    public sealed class ComputedColumns
    {
        /// <summary>What the script-block columns of one call may take in all, in milliseconds.</summary>
        public const int BudgetMilliseconds = 1000;

        // How long a batch stopped at the bound may take to end before the worker is left to it.
        private const int StopMilliseconds = 1000;

        // Runs the batch in a scope of its own and takes back what failing columns leave in the global
        // scope, the errors added to $Error and $StackTrace: they are the call's to read (stdio keeps
        // them between calls), and a changed $StackTrace would send the reset down its full path.
        private const string BatchScript = "$private:count = $global:Error.Count; $private:trace = $global:StackTrace; try { [Svc.Host.ComputedColumns]::Run($args[0]) } finally { $private:added = $global:Error.Count - $private:count; if ($private:added -gt 0) { $global:Error.RemoveRange(0, $private:added) }; $global:StackTrace = $private:trace }";

        private readonly Runspace _worker;
        private readonly Stopwatch _spent = new Stopwatch();

        /// <summary>Computes in <paramref name="worker"/>, the runspace the call ran in.</summary>
        public ComputedColumns(Runspace worker)
        {
            _worker = worker;
        }

        /// <summary>True once the bound was reached (or the worker runspace could not run a batch): later values are left null.</summary>
        public bool OutOfTime { get; private set; }

        /// <summary>
        /// Fills each job's <c>Values</c> where it has a script, in the worker runspace; what the bound
        /// leaves uncomputed stays null. Call it while no command runs in the worker runspace.
        /// </summary>
        public void Compute(IList<Job> jobs)
        {
            if (OutOfTime || jobs.Count == 0) return;
            Batch batch = new Batch(jobs);
            _spent.Start();
            PowerShell ps = PowerShell.Create();
            bool ended = true;
            try
            {
                ps.Runspace = _worker;
                ps.AddScript(BatchScript, true).AddArgument(batch);
                IAsyncResult running;
                try
                {
                    running = ps.BeginInvoke();
                }
                catch (Exception e)
                {
                    // The runspace cannot run it (broken, or busy): this call computes no more.
                    OutOfTime = true;
                    Console.Error.WriteLine("host.ps1: computing a format view's script-block columns failed to start: " + e.Message);
                    return;
                }
                long left = BudgetMilliseconds - _spent.ElapsedMilliseconds;
                if (!running.AsyncWaitHandle.WaitOne((int)Math.Max(left, 0)))
                {
                    OutOfTime = true;
                    batch.Cancelled = true;
                    ps.BeginStop(null, null);
                    ended = running.AsyncWaitHandle.WaitOne(StopMilliseconds);
                    if (!ended) Console.Error.WriteLine("host.ps1: a format view's script-block column ignored the stop at the time bound; the worker runspace stays busy with it.");
                }
                if (ended)
                {
                    try { ps.EndInvoke(running); } catch (Exception) { /* stopped, or the batch failed: its values stay null */ }
                }
            }
            finally
            {
                _spent.Stop();
                // Disposing a pipeline still running would wait for it: one that ignored the stop is left.
                if (ended) ps.Dispose();
            }
        }

        /// <summary>
        /// Runs on the worker's pipeline thread (from <see cref="BatchScript"/>): each script with $_
        /// (and $PSItem) set to its job's item, as PowerShell's formatter runs it. A script that fails
        /// gives null, as the formatter shows nothing for it.
        /// </summary>
        public static void Run(object state)
        {
            Batch batch = (Batch)(state is PSObject ? ((PSObject)state).BaseObject : state);
            Dictionary<string, ScriptBlock> compiled = new Dictionary<string, ScriptBlock>(StringComparer.Ordinal);
            foreach (Job job in batch.Jobs)
            {
                for (int i = 0; i < job.Scripts.Length; i++)
                {
                    string text = job.Scripts[i];
                    if (text == null) continue;
                    if (batch.Cancelled) return;
                    // A new variable each time: the engine puts the scope's former $_ back into the one it was given.
                    List<PSVariable> variables = new List<PSVariable> { new PSVariable("_", job.Item) };
                    try
                    {
                        ScriptBlock script;
                        if (!compiled.TryGetValue(text, out script)) compiled[text] = script = ScriptBlock.Create(text);
                        Collection<PSObject> values = script.InvokeWithContext(null, variables);
                        job.Values[i] = values.Count == 0 ? null : values.Count == 1 ? (object)values[0] : ToArray(values);
                    }
                    catch (PipelineStoppedException)
                    {
                        throw;
                    }
                    catch (Exception)
                    {
                        job.Values[i] = null;
                    }
                }
                job.Done = true;
            }
        }

        private static object[] ToArray(Collection<PSObject> values)
        {
            object[] array = new object[values.Count];
            for (int i = 0; i < values.Count; i++) array[i] = values[i];
            return array;
        }

        /// <summary>One item's scripts to run (null where a column needs none) and their values.</summary>
        public sealed class Job
        {
            /// <summary>A job for <paramref name="item"/>; <paramref name="scripts"/> has a slot per column.</summary>
            public Job(object item, string[] scripts)
            {
                Item = item;
                Scripts = scripts;
                Values = new object[scripts.Length];
            }

            /// <summary>The item, $_ of its scripts.</summary>
            public object Item { get; private set; }

            /// <summary>Per column, the script to run, or null.</summary>
            public string[] Scripts { get; private set; }

            /// <summary>Per column, the script's value once computed: null, one value, or an array.</summary>
            public object[] Values { get; private set; }

            /// <summary>True once every script of the job has run (false when the time bound came first).</summary>
            public bool Done { get; internal set; }
        }

        /// <summary>The jobs of one pipeline in the worker, and its cancellation.</summary>
        public sealed class Batch
        {
            internal Batch(IList<Job> jobs)
            {
                Jobs = jobs;
            }

            /// <summary>The jobs, in order.</summary>
            public IList<Job> Jobs { get; private set; }

            /// <summary>Set at the time bound: the batch ends before its next script.</summary>
            public volatile bool Cancelled;
        }
    }
}
