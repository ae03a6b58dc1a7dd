// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the loop of one slot (one
// connection to svc and its worker runspace). It reads frames, runs `invoke`, `stop` and the reset's
// fast path itself (every tool call takes that path), and hands every other request to the host
// script, which keeps the rare operations (startup, discovery, full reset, slots) readable as
// PowerShell.
using System;
using System.Collections;
using System.Collections.Specialized;
using System.IO;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Text.RegularExpressions;
using System.Threading.Tasks;

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

        /// <summary>Set to end the loop after the current frame (the <c>exit</c> request).</summary>
        public bool Quit { get; set; }

        /// <summary>
        /// Serves frames until the connection ends or <see cref="Quit"/> is set. Call it from a scope
        /// without strict mode: encoding output runs type-data script properties, written for
        /// non-strict code.
        /// </summary>
        public void Run()
        {
            // One pending read is kept across turns (a second ReadLineAsync while one is pending throws).
            // The loop waits on it and on the running command together, so a stop frame is seen while a
            // command runs.
            Task<string> pending = _reader.ReadLineAsync();
            while (!Quit)
            {
                Invocation running = Running;
                Task[] waitOn = running != null ? new Task[] { pending, running.Task } : new Task[] { pending };
                // A call whose client watches progress is looked at every 100 ms for new records.
                Task.WaitAny(waitOn, running != null && running.Progress ? 100 : 1000);
                if (running != null && running.Progress && !running.Task.IsCompleted) SendProgress(running);
                if (running != null && running.Task.IsCompleted) Complete(running);
                if (!pending.IsCompleted) continue;
                if (pending.Status != TaskStatus.RanToCompletion)
                {
                    string why = pending.IsFaulted ? pending.Exception.GetBaseException().Message : pending.Status.ToString();
                    Diag("reading the socket failed: " + why);
                    return;
                }
                string line = pending.Result;
                if (line == null) return;
                pending = _reader.ReadLineAsync();
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

        /// <summary>Asks the running command, if any, to stop.</summary>
        public void StopRunning()
        {
            Invocation running = Running;
            if (running == null) return;
            try { running.Stop(); } catch (Exception e) { Diag("stop failed: " + Inner(e).Message); }
        }

        /// <summary>Starts an <c>invoke</c> request; a malformed one is answered with an <c>internal</c> failure.</summary>
        public void StartInvoke(long id, Hashtable parameters)
        {
            try
            {
                Running = Invocation.Start(_worker, id, parameters);
            }
            catch (Exception e)
            {
                SendFailure(id, "internal", ErrorInfo.RecordOf(Inner(e)));
            }
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
            if (FastReset != null && string.Equals(op, "reset", StringComparison.Ordinal) && TryFastReset(requestId)) return;
            _onRequest.Invoke(requestId, op, table);
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
            Send(JsonValue.SuccessFrame(id, result));
            return true;
        }

        private void SendProgress(Invocation running)
        {
            string frame = running.TakeProgressFrame();
            if (frame != null) Send(frame);
        }

        private void Complete(Invocation running)
        {
            Running = null;
            try
            {
                IList items = running.TakeOutput();
                if (running.Select != null) items = _projection.Apply(running, items);
                Send(running.ToResponse(items));
            }
            catch (Exception e)
            {
                SendFailure(running.Id, "internal", ErrorInfo.RecordOf(Inner(e)));
            }
            finally
            {
                running.Dispose();
            }
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
