// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the parts of one worker
// runspace's engine state that the variable/function/module tables do not hold, as they were when
// startup ended: command-lookup and location actions and the runspace's other .NET event handlers
// (EngineHandlers.cs), transcripts, the language mode, argument completers, type and format data, and
// the culture of the runspace's pipeline thread. Both reset paths call Restore() first (the
// full path's script could not run under a ConstrainedLanguage a call left behind); type and format
// data cannot be put back in place, so a change to them retires the process (docs/runspaces.md).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Reflection;
using System.Runtime.InteropServices;

namespace Svc.Host
{
    /// <summary>One worker runspace's engine state beyond its session-state tables.</summary>
    public sealed class EngineState
    {
        private readonly SessionState _state;
        private readonly EngineHandlers _handlers;
        private readonly Runspace _worker;
        private readonly PropertyInfo _transcription;
        private readonly PropertyInfo _transcripts;
        private readonly PSLanguageMode _languageMode;
        private bool _languageModeChanged;
        private readonly object _context;
        private readonly PropertyInfo _customCompleters;
        private readonly PropertyInfo _nativeCompleters;
        private readonly Dictionary<string, ScriptBlock> _custom;
        private readonly Dictionary<string, ScriptBlock> _native;
        private readonly object _types;
        private readonly PropertyInfo _typesCount;
        private readonly int _typeCount;
        private readonly object _formats;
        private readonly PropertyInfo _formatDatabase;
        private readonly object _database;
        private readonly CultureInfo _culture;
        private readonly CultureInfo _uiCulture;
        private readonly ModuleScopes _modules;

        /// <summary>
        /// The state now of the worker whose global session state is <paramref name="state"/>; the
        /// pipeline thread's culture is taken to be the one <paramref name="process"/> recorded for the
        /// process's threads (null: this thread's). Throws <see cref="MissingMemberException"/> when this
        /// engine build lacks one of the members (EngineMembers.cs).
        /// </summary>
        public EngineState(Runspace worker, SessionState state, ProcessState process)
        {
            _state = state;
            _handlers = new EngineHandlers(state.InvokeCommand, worker, worker.Debugger, worker.Events);
            _worker = worker;
            _transcription = EngineMembers.Require(EngineMembers.TranscriptionData, "TranscriptionData");
            _transcripts = EngineMembers.Require(EngineMembers.Transcripts, "Transcripts");
            _languageMode = state.LanguageMode;
            object internalState = EngineMembers.Require(EngineMembers.SessionStateInternal, "Internal").GetValue(state);
            _context = EngineMembers.Require(EngineMembers.ExecutionContext, "ExecutionContext").GetValue(internalState);
            _customCompleters = EngineMembers.Require(EngineMembers.CustomCompleters, "CustomArgumentCompleters");
            _nativeCompleters = EngineMembers.Require(EngineMembers.NativeCompleters, "NativeArgumentCompleters");
            _custom = CopyOf(_customCompleters.GetValue(_context) as Dictionary<string, ScriptBlock>);
            _native = CopyOf(_nativeCompleters.GetValue(_context) as Dictionary<string, ScriptBlock>);
            object typeTable = EngineMembers.Require(EngineMembers.TypeTable, "TypeTable").GetValue(_context);
            _types = EngineMembers.Require(EngineMembers.TypeEntries, "typesInfo").GetValue(typeTable);
            _typesCount = EngineMembers.Require(EngineMembers.TypeEntryCount, "Count");
            _typeCount = (int)_typesCount.GetValue(_types);
            _formats = EngineMembers.Require(EngineMembers.FormatManager, "FormatDBManager").GetValue(_context);
            _formatDatabase = EngineMembers.Require(EngineMembers.FormatDatabase, "Database");
            _database = _formatDatabase.GetValue(_formats);
            // Not this thread's culture as it is now: a sibling's running call may have set the default
            // thread culture, which a thread that sets none reports as its own.
            _culture = process != null ? process.ThreadCulture : CultureInfo.CurrentCulture;
            _uiCulture = process != null ? process.ThreadUICulture : CultureInfo.CurrentUICulture;
            _modules = new ModuleScopes(state);
        }

        private static Dictionary<string, ScriptBlock> CopyOf(Dictionary<string, ScriptBlock> table)
        {
            return table == null ? null : new Dictionary<string, ScriptBlock>(table, table.Comparer);
        }

        /// <summary>Adds the values of the startup modules' script-scope variables to <paramref name="roots"/> (see <see cref="ModuleScopes.AddValuesTo"/>).</summary>
        public void AddModuleValuesTo(IDictionary roots)
        {
            _modules.AddValuesTo(roots);
        }

        /// <summary>Puts back the command-lookup and location actions and the runspace's other event handlers, the language mode, the argument completers and the startup modules' variables.</summary>
        public void Restore()
        {
            // Set back so that the full path's script can run, but the engine keeps the mode elsewhere
            // too (Invoke-Expression in the next call still ran constrained on 7.6.9): RetireReason
            // retires the process.
            if (_state.LanguageMode != _languageMode)
            {
                _state.LanguageMode = _languageMode;
                _languageModeChanged = true;
            }
            _handlers.Restore();
            StopTranscripts();
            RestoreCompleters(_customCompleters, _custom);
            RestoreCompleters(_nativeCompleters, _native);
            _modules.Restore();
        }

        // A transcript a call started (Start-Transcript) is the runspace's, not the call's: it would write
        // every later call's commands, arguments and output to the file the call chose, whoever makes them.
        private void StopTranscripts()
        {
            object data = _transcription.GetValue(_worker);
            IList transcripts = data != null ? _transcripts.GetValue(data) as IList : null;
            if (transcripts == null || transcripts.Count == 0) return;
            foreach (object transcript in transcripts)
            {
                IDisposable file = transcript as IDisposable;
                try
                {
                    if (file != null) file.Dispose();
                }
                catch (Exception)
                {
                    /* a file that cannot be written: the transcript ends all the same */
                }
            }
            transcripts.Clear();
        }

        private void RestoreCompleters(PropertyInfo property, Dictionary<string, ScriptBlock> saved)
        {
            Dictionary<string, ScriptBlock> now = property.GetValue(_context) as Dictionary<string, ScriptBlock>;
            if (now == null && saved == null) return;
            if (now != null && saved != null && now.Count == saved.Count)
            {
                bool same = true;
                foreach (KeyValuePair<string, ScriptBlock> entry in now)
                {
                    ScriptBlock old;
                    if (!saved.TryGetValue(entry.Key, out old) || !ReferenceEquals(old, entry.Value)) { same = false; break; }
                }
                if (same) return;
            }
            property.SetValue(_context, CopyOf(saved));
        }

        /// <summary>
        /// Why the runspace cannot be returned to its state, or null: its language mode, type or format
        /// data, or a startup module's functions or aliases changed.
        /// </summary>
        public string RetireReason()
        {
            if (_languageModeChanged) return "a call changed the language mode";
            if ((int)_typesCount.GetValue(_types) != _typeCount) return "a call changed the type data (Update-TypeData or Remove-TypeData)";
            if (!ReferenceEquals(_formatDatabase.GetValue(_formats), _database)) return "a call changed the format data (Update-FormatData)";
            return _modules.RetireReason();
        }

        [DllImport("libc", SetLastError = true)]
        private static extern int prctl(int option, ulong arg2, ulong arg3, ulong arg4, ulong arg5);

        [DllImport("libc", SetLastError = true)]
        private static extern int waitpid(int pid, out int status, int options);

        private const int WNOHANG = 1;

        private const int PR_SET_CHILD_SUBREAPER = 36;
        private static int _subreaper;

        /// <summary>
        /// Makes this process the reaper of its orphaned descendants (Linux), once: a native program a
        /// call starts that forks and exits (a double fork, <c>setsid ... &amp;</c>) leaves its child to
        /// this process, listed among its main thread's children, instead of to init, where no call
        /// end could find it.
        /// </summary>
        public static void AdoptOrphans()
        {
            if (!OperatingSystem.IsLinux() || System.Threading.Interlocked.Exchange(ref _subreaper, 1) == 1) return;
            try { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); } catch (Exception) { /* no libc prctl: orphans go to init */ }
        }

        /// <summary>
        /// Run on the pipeline thread as a call ends: puts the thread's culture back and, unless
        /// <paramref name="keepChildren"/>, ends the native processes the thread started (Linux, where
        /// each thread's children are listed; their trees go too), and the orphans adopted by the
        /// process (<see cref="AdoptOrphans"/>): the host starts no process of its own, so an orphan
        /// is what some call's program left behind.
        /// </summary>
        public void EndCall(bool keepChildren)
        {
            if (!ReferenceEquals(CultureInfo.CurrentCulture, _culture)) CultureInfo.CurrentCulture = _culture;
            if (!ReferenceEquals(CultureInfo.CurrentUICulture, _uiCulture)) CultureInfo.CurrentUICulture = _uiCulture;
            if (keepChildren || !OperatingSystem.IsLinux()) return;
            EndChildren(ChildrenList(ref _threadChildren, "/proc/thread-self/children"), false);
            EndChildren(ChildrenList(ref _processChildren, "/proc/self/task/" + Environment.ProcessId + "/children"), true);
        }

        // The children lists, kept open (the thread's per pipeline thread): every call reads both, and
        // a read at offset 0 lists the children of that moment. Opening and reading them as text each
        // time cost about a tenth of the worker's CPU for a call like Get-Date.
        [ThreadStatic] private static Microsoft.Win32.SafeHandles.SafeFileHandle _threadChildren;
        private static Microsoft.Win32.SafeHandles.SafeFileHandle _processChildren;

        // The list's text: "" when there are no children (the usual case), null when it cannot be read.
        private static string ChildrenList(ref Microsoft.Win32.SafeHandles.SafeFileHandle handle, string path)
        {
            try
            {
                if (handle == null) handle = File.OpenHandle(path);
                Span<byte> text = stackalloc byte[256];
                int length = RandomAccess.Read(handle, text, 0);
                if (length == 0) return "";
                if (length < text.Length) return System.Text.Encoding.ASCII.GetString(text.Slice(0, length));
            }
            catch (Exception)
            {
                // Read as a whole below.
            }
            try { return File.ReadAllText(path); } catch (Exception) { return null; }
        }

        // Ends each process of a children list with its tree. An adopted orphan is no child .NET
        // started, so nothing else waits for it: it is reaped here, or it would stay a zombie.
        private static void EndChildren(string children, bool reap)
        {
            if (string.IsNullOrEmpty(children)) return;
            foreach (string text in children.Split(' ', StringSplitOptions.RemoveEmptyEntries))
            {
                int pid;
                if (!int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out pid) || IsJobHost(pid)) continue;
                try
                {
                    using (Process child = Process.GetProcessById(pid)) child.Kill(true);
                }
                catch (Exception)
                {
                    /* already gone */
                }
                if (reap) Reap(pid);
            }
        }

        private static void Reap(int pid)
        {
            int status;
            for (int tries = 0; tries < 50; tries++)
            {
                try { if (waitpid(pid, out status, WNOHANG) != 0) return; } catch (Exception) { return; }
                System.Threading.Thread.Sleep(2);
            }
        }

        // A Start-Job process (this pwsh with -s, serving the job over its stdin): the full reset ends
        // it with its job (Remove-Job); killed here, that Remove-Job would wait on a dead connection.
        private static bool IsJobHost(int pid)
        {
            string[] arguments;
            try { arguments = File.ReadAllText("/proc/" + pid + "/cmdline").Split('\0'); } catch (Exception) { return false; }
            if (arguments.Length < 2 || !string.Equals(arguments[0], Environment.ProcessPath, StringComparison.Ordinal)) return false;
            return Array.IndexOf(arguments, "-s") > 0;
        }
    }
}
