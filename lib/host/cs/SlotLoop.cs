// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the loop of one slot (one
// connection to svc and its worker runspace). It reads frames, runs `invoke`, `stop` and the reset's
// fast path itself (every tool call takes that path), and hands every other request to the host
// script, which keeps the rare operations (startup, discovery, full reset, slots) readable as
// PowerShell.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.IO;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Text.RegularExpressions;
using System.Threading;

namespace Svc.Host
{
    /// <summary>One slot's frame loop (docs/worker-protocol.md §2).</summary>
    public sealed class SlotLoop
    {
        private static readonly Regex LeadingId = new Regex("^\\s*\\{\\s*\"id\"\\s*:\\s*(-?\\d{1,18})\\s*[,}]", RegexOptions.CultureInvariant);
        private readonly int _slot;
        private readonly StreamReader _reader;
        private readonly StreamWriter _writer;
        private readonly Runspace _worker;
        private readonly ScriptBlock _onRequest;
        private readonly OutputProjection _projection;
        private readonly object _gate = new object();
        private readonly Queue<string> _lines = new Queue<string>();
        // Frames other threads made (a running call's prompts), written by the loop: one writer only.
        private readonly Queue<string> _posted = new Queue<string>();
        private volatile string _readFailure;
        // The id the running call's reset answers with (its thenReset), or -1 when it asked for none.
        private long _resetAfter = -1;

        /// <summary>
        /// A loop for slot <paramref name="slot"/>. <paramref name="onRequest"/> is called with (id, op,
        /// params) for every request the loop does not run itself (id is null for an <c>open</c> frame);
        /// <paramref name="projection"/> shapes the output of an invoke that asks for it.
        /// </summary>
        public SlotLoop(int slot, StreamReader reader, StreamWriter writer, Runspace worker, ScriptBlock onRequest, OutputProjection projection)
        {
            _slot = slot;
            _reader = reader;
            _writer = writer;
            _worker = worker;
            _onRequest = onRequest;
            _projection = projection;
        }

        /// <summary>The command running now, or null.</summary>
        public Invocation Running { get; private set; }

        /// <summary>Set by the host script once the worker runspace is free for calls (its preload is done).</summary>
        public bool Ready { get; set; }

        /// <summary>The reset's fast path, once startup has recorded the clean state; null sends every reset to the script.</summary>
        public FastReset FastReset { get; set; }

        /// <summary>The process-wide state put back before each call's response; null until startup has recorded it.</summary>
        public ProcessState ProcessState { get; set; }

        /// <summary>The engine state put back by each reset and as each call ends; null until startup has recorded it.</summary>
        public EngineState EngineState { get; set; }

        /// <summary>The items of the objects startup left in variables, put back by each reset; null until startup has recorded them.</summary>
        public StartupObjects StartupObjects { get; set; }

        /// <summary>Keep the native processes a call started after it ends (<c>keepNativeProcesses</c> at startup).</summary>
        public bool KeepChildren { get; set; }

        /// <summary>Set to end the loop after the current frame (the <c>exit</c> request).</summary>
        public bool Quit { get; set; }

        /// <summary>
        /// Serves frames until the connection ends or <see cref="Quit"/> is set. Call it from a scope
        /// without strict mode: encoding output runs type-data script properties, written for
        /// non-strict code.
        /// </summary>
        public void Run()
        {
            // Frames are read by a thread of the slot's own, in blocking reads, and handed over under a
            // lock; the running command's end is signalled the same way. The loop so sees a stop frame
            // while a command runs. Socket reads through ReadLineAsync and waits through Task.WaitAny
            // went through the socket engine's thread and thread-pool workers instead: about twice the
            // CPU of the call itself on a 2-core machine.
            Thread reader = new Thread(ReadFrames) { IsBackground = true, Name = "svc slot " + _slot + " reader" };
            reader.Start();
            while (!Quit)
            {
                Invocation running = Running;
                bool haveLine = false;
                string line = null;
                string[] posted = null;
                lock (_gate)
                {
                    // A call whose client watches progress or log messages is looked at every 100 ms for new records.
                    int wait = running != null && (running.Progress || running.Log != null) ? 100 : 1000;
                    if (_lines.Count == 0 && _posted.Count == 0 && (running == null || !running.Task.IsCompleted)) Monitor.Wait(_gate, wait);
                    if (_lines.Count > 0)
                    {
                        line = _lines.Dequeue();
                        haveLine = true;
                    }
                    if (_posted.Count > 0)
                    {
                        posted = _posted.ToArray();
                        _posted.Clear();
                    }
                }
                // Records written before a prompt go before it: svc hands them to the request that
                // is serving the call until the prompt makes that request answer (a held call).
                if (running != null && running.Log != null && !running.Task.IsCompleted) SendLog(running);
                if (posted != null)
                {
                    foreach (string frame in posted) Send(frame);
                }
                if (running != null && running.Progress) SendProgress(running);
                if (running != null && running.Task.IsCompleted) Complete(running);
                if (!haveLine)
                {
                    // Woken by the time-out with nothing to do: a quiet process gives memory back.
                    if (running == null) IdleTrim.MaybeTrim();
                    continue;
                }
                IdleTrim.Touch();
                if (line == null)
                {
                    if (_readFailure != null) Diag("reading the socket failed: " + _readFailure);
                    return;
                }
                try
                {
                    Handle(line);
                }
                catch (Exception e)
                {
                    Diag("frame handling failed: " + Inner(e).Message);
                }
            }
        }

        // The reader thread: every line, then null once the connection has ended.
        private void ReadFrames()
        {
            string line;
            do
            {
                try
                {
                    line = _reader.ReadLine();
                }
                catch (Exception e)
                {
                    _readFailure = e.Message;
                    line = null;
                }
                lock (_gate)
                {
                    _lines.Enqueue(line);
                    Monitor.Pulse(_gate);
                }
            }
            while (line != null);
        }

        private void Wake()
        {
            lock (_gate) Monitor.Pulse(_gate);
        }

        // From any thread: a frame for the loop to write.
        private void Post(string frame)
        {
            lock (_gate)
            {
                _posted.Enqueue(frame);
                Monitor.Pulse(_gate);
            }
        }

        /// <summary>Asks the running command, if any, to stop.</summary>
        public void StopRunning()
        {
            Invocation running = Running;
            if (running == null) return;
            try { running.Stop(); } catch (Exception e) { Diag("stop failed: " + Inner(e).Message); }
        }

        /// <summary>
        /// Starts an <c>invoke</c> request; a malformed one is answered with an <c>internal</c> failure.
        /// With <c>thenReset</c> (an integer id), the reset follows the call's answer as request
        /// <c>thenReset</c> would (protocol §4.4): one frame less each way and one wake-up less per call.
        /// </summary>
        public void StartInvoke(long id, Hashtable parameters)
        {
            object then = parameters["thenReset"];
            long resetId = IsInteger(then) ? Convert.ToInt64(then) : -1;
            try
            {
                EngineState engine = EngineState;
                bool keep = KeepChildren;
                Running = Invocation.Start(_worker, id, parameters, Wake, engine == null ? null : () => engine.EndCall(keep), _projection, Post);
                _resetAfter = resetId;
                IdleTrim.CallStarted();
            }
            catch (Exception e)
            {
                SendFailure(id, "internal", ErrorInfo.RecordOf(Inner(e)));
                if (resetId >= 0) ChainedReset(resetId);
            }
        }

        // The reset a call asked for with thenReset, run once its answer is sent. A failure is answered
        // like the failure of a reset request: svc then discards the worker.
        private void ChainedReset(long id)
        {
            try
            {
                Reset(id, new Hashtable(StringComparer.OrdinalIgnoreCase));
            }
            catch (Exception e)
            {
                SendFailure(id, "reset", ErrorInfo.RecordOf(Inner(e)));
            }
        }

        // A reset: retire when the process must go, else the fast path, else the host script's full path.
        private void Reset(long id, Hashtable parameters)
        {
            if (Retire(id)) return;
            if (FastReset != null && TryFastReset(id)) return;
            _onRequest.Invoke(id, "reset", parameters);
        }

        /// <summary>Writes one frame.</summary>
        public void Send(string json)
        {
            _writer.WriteLine(json);
        }

        /// <summary>Answers request <paramref name="id"/> with a failure of <paramref name="kind"/> carrying <paramref name="record"/>.</summary>
        public void SendFailure(object id, string kind, ErrorRecord record)
        {
            SendFailure(id, kind, record.ToString(), ErrorInfo.From(record, true));
        }

        private void SendFailure(object id, string kind, string message, object record)
        {
            Send(JsonValue.FailureFrame(id, kind, message, record));
        }

        private void Handle(string line)
        {
            Hashtable frame = null;
            try { frame = FrameJson.ParseObject(line); } catch (Exception) { frame = null; }
            if (frame == null)
            {
                // Only a leading top-level id is trusted: a stop notification carries its target id in params.
                Match match = LeadingId.Match(line);
                if (match.Success) SendFailure(long.Parse(match.Groups[1].Value), "protocol", "The frame is not a valid JSON object.", null);
                else Diag("dropped a frame that is not a JSON object");
                return;
            }
            object id = frame["id"];
            string op = frame["op"] as string;
            object parameters = frame["params"];

            if (string.Equals(op, "stop", StringComparison.Ordinal))
            {
                Hashtable stop = parameters as Hashtable;
                object target = stop != null ? stop["id"] : null;
                Invocation running = Running;
                if (running != null && IsInteger(target) && Convert.ToInt64(target) == running.Id) StopRunning();
                return;
            }
            if (string.Equals(op, "answer", StringComparison.Ordinal))
            {
                // svc's answer to a prompt of the running call; one for another call is ignored.
                Hashtable answer = parameters as Hashtable;
                object target = answer != null ? answer["id"] : null;
                Invocation running = Running;
                if (running != null && running.Prompter != null && IsInteger(target) && Convert.ToInt64(target) == running.Id) running.Prompter.Answer(answer);
                return;
            }
            if (string.Equals(op, "open", StringComparison.Ordinal))
            {
                _onRequest.Invoke(null, op, parameters);
                return;
            }
            if (!IsInteger(id))
            {
                Diag("dropped a frame without an integer id");
                return;
            }
            long requestId = Convert.ToInt64(id);
            if (op == null) { SendFailure(requestId, "protocol", "The frame has no op.", null); return; }
            if (parameters == null) parameters = new Hashtable(StringComparer.OrdinalIgnoreCase);
            Hashtable table = parameters as Hashtable;
            if (table == null) { SendFailure(requestId, "protocol", "The params of the frame are not an object.", null); return; }
            if (Running != null) { SendFailure(requestId, "busy", "Another request is running.", null); return; }
            if (Ready && string.Equals(op, "invoke", StringComparison.Ordinal))
            {
                StartInvoke(requestId, table);
                return;
            }
            if (string.Equals(op, "reset", StringComparison.Ordinal))
            {
                Reset(requestId, table);
                return;
            }
            _onRequest.Invoke(requestId, op, table);
        }

        // Both reset paths begin here: the engine state and the items of startup objects a call may have
        // changed are put back, then what cannot be put back is looked for. True when the reset was answered: the process must retire
        // (a success naming why; svc then replaces the process) or the step failed.
        private bool Retire(long id)
        {
            string reason;
            try
            {
                // A process without every member a reset reads cannot tell what a call left behind.
                reason = EngineMembers.RetireReason();
                // A computed column that ignored the stop at its time bound (ComputedColumns.cs) still
                // runs there: no later call could run, and the state is not the call's to restore.
                if (reason == null && _worker.RunspaceAvailability != RunspaceAvailability.Available)
                {
                    reason = "the worker runspace is still running a format view's script-block column that ignored the stop at its time bound";
                }
                else if (reason == null)
                {
                    if (EngineState != null) EngineState.Restore();
                    reason = StartupObjects != null ? StartupObjects.Restore() : null;
                    if (reason == null && EngineState != null) reason = EngineState.RetireReason();
                    if (reason == null && ProcessState != null) reason = ProcessState.RetireReason();
                }
            }
            catch (Exception e)
            {
                SendFailure(id, "reset", ErrorInfo.RecordOf(Inner(e)));
                return true;
            }
            if (reason == null) return false;
            OrderedDictionary result = new OrderedDictionary();
            result["durationMs"] = 0;
            result["path"] = "retire";
            result["retire"] = reason;
            result["workingSetBytes"] = ProcessState.WorkingSetBytes();
            Send(JsonValue.SuccessFrame(id, result));
            return true;
        }

        // True when the fast path answered the reset (done, or failed); false leaves it to the full path.
        private bool TryFastReset(long id)
        {
            OrderedDictionary result;
            try
            {
                result = FastReset.TryReset();
            }
            catch (Exception e)
            {
                SendFailure(id, "reset", ErrorInfo.RecordOf(Inner(e)));
                return true;
            }
            if (result == null) return false;
            result["workingSetBytes"] = ProcessState.WorkingSetBytes();
            Send(JsonValue.SuccessFrame(id, result));
            return true;
        }

        private void SendProgress(Invocation running)
        {
            string frame = running.TakeProgressFrame();
            if (frame != null) Send(frame);
        }

        // The records written since the last look, as a log frame (protocol §4.4 `log`).
        private void SendLog(Invocation running)
        {
            string frame = running.Log.TakeFrame(running.Id);
            if (frame != null) Send(frame);
        }

        private void Complete(Invocation running)
        {
            // The last records go before the response: the client hears them as part of the call.
            // Taken here, after the end, not by the loop's look before it: a burst shorter than
            // 100 ms may be written between that look and the end.
            if (running.Progress) SendProgress(running);
            if (running.Log != null) SendLog(running);
            Running = null;
            long resetId = _resetAfter;
            _resetAfter = -1;
            IdleTrim.CallEnded();
            try
            {
                string response = running.ToResponse(running.TakeOutput());
                // The environment and the rest of the process-wide state go back before the caller hears
                // of the end: its next call may run on a sibling runspace of this process at once.
                if (ProcessState != null) ProcessState.Restore();
                Send(response);
            }
            catch (Exception e)
            {
                ErrorRecord record = ErrorInfo.RecordOf(Inner(e));
                CallLimits limits = running.Limits;
                // What failed may quote the call's output: within the call's limits like the rest.
                if (limits == null) SendFailure(running.Id, "internal", record);
                else SendFailure(running.Id, "internal", TextCut.CutMiddle(record.ToString(), limits.TextBytes), limits.Cut(ErrorInfo.From(record, true)));
            }
            finally
            {
                running.Dispose();
            }
            if (resetId >= 0) ChainedReset(resetId);
        }

        private static bool IsInteger(object value)
        {
            return value is int || value is long;
        }

        // A call into script wraps what it throws in a RuntimeException; the cause is the message.
        private static Exception Inner(Exception exception)
        {
            if (exception is MethodInvocationException && exception.InnerException != null) return exception.InnerException;
            return exception;
        }

        private void Diag(string message)
        {
            Console.Error.WriteLine("host.ps1: slot " + _slot + ": " + message);
        }
    }
}
