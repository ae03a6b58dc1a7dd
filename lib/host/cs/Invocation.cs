// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): one `invoke` request (protocol
// §4.4) from its start to the response frame. Compiled because this is the path every tool call takes:
// the same steps written as PowerShell script cost about 0.9 ms per call.
using System;
using System.Collections;
using System.Collections.ObjectModel;
using System.Collections.Specialized;
using System.Diagnostics;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Net;
using System.Threading.Tasks;

namespace Svc.Host
{
    /// <summary>A command running in the worker runspace, and what it produced.</summary>
    public sealed class Invocation : IDisposable
    {
        private readonly PSDataCollection<PSObject> _output = new PSDataCollection<PSObject>();
        private readonly Stopwatch _watch = new Stopwatch();
        // Set once, by Start's object initializer.
        private Runspace _worker;
        // The command and the arguments it was given, for the message of a prompt it made (ErrorInfo).
        private string _command;
        private Hashtable _arguments;
        private int _first;
        private object _savedProgress;
        private bool _stopRequested;
        private bool _moreResults;
        private object _shapeTypes;
        private object _unknownProperties;
        private int _uncomputed;
        // The output within the limits; items join it as the command writes them while they need no
        // format lookup (OnOutputAdded), the rest when it has ended (ToResponse).
        private OutputBudget _budget;
        private OutputProjection.Pass _projection;
        // Items the command wrote (after `first`), and whether the worker stopped it because its output
        // was full (limits.stopWhenFull).
        private int _written;
        private bool _stoppedWhenFull;
        // Held while the command runs once an item waits for a format lookup (all later ones wait
        // behind it): a lower bound of their JSON, and the items let go of at once because they could
        // never be sent, with a lower bound of their size.
        private long _heldBytes;
        private int _droppedItems;
        private long _droppedBytes;
        // The prompts of an interactive call.
        private Prompter _prompter;

        /// <summary>The request's id.</summary>
        public long Id { get; private set; }

        /// <summary>The pipeline; disposed by <see cref="Dispose"/>.</summary>
        public PowerShell PowerShell { get; private set; }

        /// <summary>Completes when the command has ended, however it ended; faulted with what EndInvoke threw.</summary>
        public Task Task { get; private set; }

        /// <summary>True when the client watches progress: records are sent while the command runs.</summary>
        public bool Progress { get; private set; }

        /// <summary>The records sent as log messages while the command runs (<c>log</c>), or null when the client asked for none.</summary>
        public LiveLog Log { get; private set; }

        /// <summary>The projection request (<c>properties</c>, <c>display</c>), or null for none.</summary>
        public Hashtable Select { get; private set; }

        /// <summary>What svc keeps of the response (<c>limits</c>), or null when the request set none.</summary>
        public CallLimits Limits { get; private set; }

        /// <summary>The prompts of an interactive call (<c>interactive</c>), else null.</summary>
        public Prompter Prompter { get { return _prompter; } }

        /// <summary>
        /// The script an invoke with <c>complete</c> runs instead of its command (lib/host/completion.ps1),
        /// set once by each slot as it starts; null until then, and such an invoke is refused.
        /// </summary>
        public static string CompletionScript { get; set; }

        private Invocation()
        {
        }

        /// <summary>
        /// Checks the request's params and starts the command in <paramref name="worker"/>. Throws with a
        /// one-sentence message when the params are malformed. <paramref name="ended"/> is called once the
        /// command has ended and <see cref="Task"/> has completed: on the pipeline's thread, or on the
        /// caller's, inside this method, when the pipeline fails before it starts. <paramref name="atEnd"/>
        /// (may be null) runs on the pipeline's thread before <see cref="Task"/> completes, so what it
        /// undoes is undone before the response is sent. <paramref name="projection"/> (may be null)
        /// projects the output for the request's <c>select</c>. With <c>interactive</c>, the command's
        /// prompts are sent as frames through <paramref name="post"/> (from the pipeline's thread) and
        /// wait for svc's answers. Defaults: depth 4, no limit on items, no projection, no progress, no
        /// log messages, no limits on the response, not interactive.
        /// </summary>
        public static Invocation Start(Runspace worker, long id, Hashtable request, Action ended, Action atEnd, OutputProjection projection, Action<string> post)
        {
            string command = request["command"] as string;
            if (string.IsNullOrEmpty(command)) throw new ArgumentException("The invoke request names no command.");
            int depth = 4;
            if (request["depth"] != null) depth = Convert.ToInt32(request["depth"]);
            if (depth < 0 || depth > 100) throw new ArgumentException("Depth " + depth + " is outside 0..100, the range ConvertTo-Json accepts.");
            object parametersValue = request["parameters"];
            Hashtable parameters = parametersValue as Hashtable;
            if (parametersValue != null && parameters == null) throw new ArgumentException("The invoke parameters are not an object.");
            object[] credentials = request["credentials"] as object[];
            if (credentials == null && request["credentials"] != null) credentials = new object[] { request["credentials"] };
            object selectValue = request["select"];
            Hashtable select = selectValue as Hashtable;
            if (selectValue != null && select == null) throw new ArgumentException("The invoke select is not an object.");
            bool progress = request["progress"] is bool && (bool)request["progress"];
            bool interactive = request["interactive"] is bool && (bool)request["interactive"];
            ConfirmImpact? confirmPreference = null;
            if (request["confirmPreference"] != null)
            {
                ConfirmImpact parsed;
                if (!Enum.TryParse(request["confirmPreference"] as string ?? "", false, out parsed) || !Enum.IsDefined(typeof(ConfirmImpact), parsed)) throw new ArgumentException("The invoke confirmPreference is not one of None, Low, Medium, High.");
                confirmPreference = parsed;
            }
            // Every call sets the host's prompter, interactive or not: whatever an earlier call left
            // there (user code can reach the host) never answers this call's prompts.
            WorkerHost host = WorkerHost.Of(worker);
            int logRank = LiveLog.RankOf(request["log"]);
            CallLimits limits = CallLimits.From(request["limits"]);
            object providerValue = request["provider"];
            Hashtable provider = providerValue as Hashtable;
            if (providerValue != null && provider == null) throw new ArgumentException("The invoke provider is not an object.");
            if (provider != null) RequireProvider(worker, provider, parameters);
            int first = 0;
            if (request["first"] != null)
            {
                first = Convert.ToInt32(request["first"]);
                if (first < 1) throw new ArgumentException("First " + first + " is not a positive count.");
            }

            object completeValue = request["complete"];
            Hashtable complete = completeValue as Hashtable;
            if (completeValue != null && (complete == null || !(complete["parameter"] is string) || !(complete["word"] is string))) throw new ArgumentException("The invoke complete is not an object with a parameter and a word.");
            if (complete != null && CompletionScript == null) throw new ArgumentException("This worker has no completion script.");

            PowerShell ps = PowerShell.Create(worker);
            object savedProgress = null;
            bool progressSet = false;
            LiveLog log = null;
            try
            {
                if (complete != null)
                {
                    // The command is completed, not run: its other arguments only tell completers what
                    // the line holds so far, as strings in the line CompleteInput parses.
                    ps.AddScript(CompletionScript, true).AddParameter("Command", command).AddParameter("Parameter", complete["parameter"])
                        .AddParameter("Word", complete["word"]).AddParameter("Arguments", parameters ?? new Hashtable());
                }
                else
                {
                    ps.AddCommand(command);
                }
                if (parameters != null && complete == null)
                {
                    foreach (DictionaryEntry entry in parameters)
                    {
                        string name = (string)entry.Key;
                        object value = entry.Value;
                        if (value != null && Contains(credentials, name)) value = NewCredential(value);
                        ps.AddParameter(name, value);
                    }
                }
                // One item past the limit says whether more exist; Select-Object then stops the command.
                if (first > 0) ps.AddCommand("Microsoft.PowerShell.Utility\\Select-Object").AddParameter("First", first + 1);
                // Progress records are stored only under Continue; the worker runs with SilentlyContinue so
                // that calls nobody watches keep none. The saved value is put back when the call ends.
                if (progress)
                {
                    savedProgress = worker.SessionStateProxy.GetVariable("ProgressPreference");
                    worker.SessionStateProxy.SetVariable("ProgressPreference", ActionPreference.Continue);
                    progressSet = true;
                }
                if (logRank >= 0) log = LiveLog.Start(logRank, worker, ps.Streams, limits);
                // The operator's threshold, at every call: neither a startup script nor an earlier
                // call of the same runspace (stdio keeps its state) decides what asks the user.
                if (confirmPreference.HasValue) worker.SessionStateProxy.SetVariable("ConfirmPreference", confirmPreference.Value);
                Invocation run = new Invocation
                {
                    _worker = worker,
                    _command = command,
                    _arguments = parameters,
                    Id = id,
                    PowerShell = ps,
                    _first = first,
                    Select = select,
                    Limits = limits,
                    Progress = progress,
                    _savedProgress = savedProgress,
                    Log = log,
                };
                if (interactive) run._prompter = new Prompter(id, command, post, limits != null ? limits.TextBytes : 0, limits != null ? limits.StreamBytes : 0, run.Stop, () => Runspace.DefaultRunspace == worker);
                if (host != null) host.Prompter = run._prompter;
                if (projection != null && select != null)
                {
                    // Only worth it where the output may be projected while the command runs.
                    if (limits != null && limits.StopWhenFull) projection.Prepare(worker, command);
                    run._projection = projection.Begin(run);
                }
                run._budget = new OutputBudget(limits, run._projection, depth);
                if (limits != null) run._output.DataAdded += run.OnOutputAdded;
                // A completed, empty input collection: the command gets no pipeline input. The output
                // collection is ours, so objects written before a Stop or a terminating error survive.
                PSDataCollection<PSObject> input = new PSDataCollection<PSObject>();
                input.Complete();
                // BeginInvoke with a callback, not InvokeAsync: its Task waits for the pipeline through a
                // registered wait and a thread-pool hop, two extra thread wake-ups per call that cost more
                // CPU than the call itself on a small machine.
                TaskCompletionSource<object> done = new TaskCompletionSource<object>();
                run.Task = done.Task;
                run._watch.Start();
                ps.BeginInvoke<PSObject, PSObject>(input, run._output, null, result =>
                {
                    // Whatever runs in the runspace after the call (computed columns, the reset) prompts
                    // nobody.
                    if (host != null) host.Prompter = null;
                    if (atEnd != null)
                    {
                        try { atEnd(); } catch (Exception e) { Console.Error.WriteLine("host.ps1: ending a call's side effects failed: " + e.Message); }
                    }
                    try
                    {
                        ps.EndInvoke(result);
                        done.TrySetResult(null);
                    }
                    catch (Exception e)
                    {
                        done.TrySetException(e);
                    }
                    ended();
                }, null);
                return run;
            }
            catch
            {
                // A command that never started does not keep the progress preference it was given.
                if (progressSet)
                {
                    try { worker.SessionStateProxy.SetVariable("ProgressPreference", savedProgress); }
                    catch (Exception) { /* the failure being thrown says more than this one */ }
                }
                if (host != null) host.Prompter = null;
                if (log != null)
                {
                    try { log.PutBack(); }
                    catch (Exception) { /* the failure being thrown says more than this one */ }
                }
                ps.Dispose();
                throw;
            }
        }

        // On the pipeline's thread, as each output item is written: the item joins the output at once, so
        // the worker knows the moment the output is full, lets go of every later item as it is written
        // (a command that writes gigabytes does not have the worker hold them until it ends) and, when
        // svc allows it, stops the command there. An item whose projection needs a format lookup is held
        // for the command's end, and so is every later one, while they may still fit.
        private void OnOutputAdded(object sender, DataAddedEventArgs e)
        {
            PSObject item = _output[e.Index];
            _written++;
            if (_first > 0 && _written > _first)
            {
                // The extra item that says more exist; Select-Object stops the command after it.
                _moreResults = true;
                _output.RemoveAt(e.Index);
                return;
            }
            if (_output.Count == 1 && _budget.TryAdd(item, false))
            {
                _output.RemoveAt(e.Index);
                if (_budget.Full) StopWhenFull();
                return;
            }
            long bound = OutputBudget.LowerBound(item);
            if (_budget.Bytes + _heldBytes <= Limits.OutputBytes)
            {
                _heldBytes += bound;
                return;
            }
            _output.RemoveAt(e.Index);
            _droppedItems++;
            _droppedBytes += bound;
            StopWhenFull();
        }

        // The output is full: no later item can be sent. A command svc marked as only reading
        // (limits.stopWhenFull) is stopped, as Select-Object -First stops one; any other runs to its
        // end, its side effects being what it was called for.
        private void StopWhenFull()
        {
            if (!Limits.StopWhenFull || _stopRequested) return;
            _stoppedWhenFull = true;
            Stop();
            // BeginStop lands on a thread-pool thread, and on a busy machine a fast writer got hundreds
            // of items further before it did; thrown here, on the pipeline's thread, the stop takes
            // effect at this write, as the engine's own check in WriteObject would make it. An item
            // added from any other thread waits for BeginStop: an exception there would be nobody's.
            if (Runspace.DefaultRunspace == _worker) throw new PipelineStoppedException();
        }

        // Whether an exception is, or wraps, the TerminateException a prompt's answer ends a call with.
        private static bool IsTermination(Exception exception)
        {
            for (int depth = 0; exception != null && depth < 8; depth++, exception = exception.InnerException)
            {
                if (exception is TerminateException) return true;
                IContainsErrorRecord carrier = exception as IContainsErrorRecord;
                ErrorRecord record = null;
                try { record = carrier != null ? carrier.ErrorRecord : null; } catch (Exception) { record = null; }
                if (record != null && record.Exception is TerminateException) return true;
            }
            return false;
        }

        /// <summary>Asks the command to stop, once; returns at once (Stop() would block the slot's loop).</summary>
        public void Stop()
        {
            // A prompt waiting for its answer ends first: the pipeline can stop only once it returns.
            if (_prompter != null) _prompter.Stop();
            if (_stopRequested) return;
            _stopRequested = true;
            PowerShell.BeginStop(null, null);
        }

        /// <summary>
        /// The frame for the newest progress record written since the last look that says how far the
        /// command got, or null when none came. A burst ending in <c>Write-Progress -Completed</c> (which
        /// svc does not send) still reports the progress before it.
        /// </summary>
        public string TakeProgressFrame()
        {
            Collection<ProgressRecord> records = PowerShell.Streams.Progress.ReadAll();
            ProgressRecord record = null;
            for (int i = records.Count - 1; i >= 0 && record == null; i--)
            {
                if (records[i].RecordType != ProgressRecordType.Completed) record = records[i];
            }
            if (record == null) return null;
            OrderedDictionary frame = new OrderedDictionary();
            frame["type"] = "progress";
            frame["id"] = Id;
            frame["activity"] = record.Activity ?? "";
            frame["status"] = record.StatusDescription ?? "";
            frame["operation"] = ErrorInfo.NonEmpty(record.CurrentOperation);
            frame["percent"] = record.PercentComplete;
            frame["completed"] = record.RecordType == ProgressRecordType.Completed;
            return JsonValue.Serialize(Limits != null ? Limits.Cut(frame) : frame);
        }

        /// <summary>
        /// Call once the task has completed: puts the progress and log preferences back and returns the output
        /// items, cut to the limit the request set.
        /// </summary>
        public PSObject[] TakeOutput()
        {
            _watch.Stop();
            if (Progress) _worker.SessionStateProxy.SetVariable("ProgressPreference", _savedProgress);
            if (Log != null) Log.PutBack();
            Collection<PSObject> all = _output.ReadAll();
            int count = all.Count;
            // Under limits the extra item was told apart as it was written (OnOutputAdded).
            if (Limits == null && _first > 0 && count > _first)
            {
                _moreResults = true;
                count = _first;
            }
            PSObject[] items = new PSObject[count];
            for (int i = 0; i < count; i++) items[i] = all[i];
            return items;
        }

        /// <summary>
        /// What the projection reported: per type what was shown and left out, unmatched names, and the
        /// items whose script-block columns the time bound left null.
        /// </summary>
        public void SetProjectionReport(object types, object unknownProperties, int uncomputed)
        {
            _shapeTypes = types;
            _unknownProperties = unknownProperties;
            _uncomputed = uncomputed;
        }

        /// <summary>
        /// The response frame: the output, each item projected for the request's <c>select</c> and
        /// encoded as ConvertTo-Json -Compress -EnumsAsStrings would at the request's depth (an item
        /// that cannot be encoded becomes its string), <paramref name="items"/> being those held until
        /// the end; then the streams, all within the request's limits. Runs type-data script
        /// properties, so call it from a scope without strict mode.
        /// </summary>
        public string ToResponse(PSObject[] items)
        {
            // The held items are projected now; their script-block columns are computed a batch ahead.
            if (_projection != null) _projection.Hold(items);
            for (int i = 0; i < items.Length; i++)
            {
                _budget.TryAdd(items[i], true);
                items[i] = null;
            }
            _budget.Dropped(_droppedItems, _droppedBytes);
            string output = _budget.ToJson();
            if (_projection != null) _projection.Finish();
            bool stopped = PowerShell.InvocationStateInfo.State == PSInvocationState.Stopped;
            // The task is built over EndInvoke; its AggregateException holds what EndInvoke threw.
            Exception terminating = Task.IsFaulted && Task.Exception != null ? Task.Exception.InnerException : null;
            ErrorRecord terminatingRecord = null;
            // A prompt's answer ends the call by TerminateException; a command invoked directly (not
            // from script) reports it as an error of its own ("System error."), which it is not.
            bool byPrompt = _prompter != null && _prompter.StoppedCall;
            if (terminating != null && !(stopped && terminating is PipelineStoppedException) && !(byPrompt && IsTermination(terminating))) terminatingRecord = ErrorInfo.RecordOf(terminating);
            // Errors first: under the limits they are the records most worth keeping.
            ArrayList errors = new ArrayList();
            foreach (ErrorRecord record in PowerShell.Streams.Error.ReadAll())
            {
                if (terminatingRecord != null && ReferenceEquals(record, terminatingRecord)) continue;
                if (byPrompt && IsTermination(record.Exception)) continue;
                Add(errors, "errors", () => ErrorInfo.From(record, false, _command, _arguments));
            }
            if (terminatingRecord != null)
            {
                OrderedDictionary info = ErrorInfo.From(terminatingRecord, true, _command, _arguments);
                errors.Add(Limits != null ? Limits.Cut(info) : info);
            }
            ArrayList warnings = new ArrayList();
            foreach (WarningRecord record in PowerShell.Streams.Warning.ReadAll()) Add(warnings, "warnings", () => record.Message);
            ArrayList information = new ArrayList();
            foreach (InformationRecord record in PowerShell.Streams.Information.ReadAll())
            {
                Add(information, "information", () =>
                {
                    OrderedDictionary entry = new OrderedDictionary();
                    entry["message"] = LanguagePrimitives.ConvertTo<string>(record.MessageData) ?? "";
                    entry["tags"] = record.Tags != null ? new ArrayList(record.Tags) : new ArrayList();
                    entry["source"] = record.Source;
                    return entry;
                });
            }
            ArrayList verbose = new ArrayList();
            foreach (VerboseRecord record in PowerShell.Streams.Verbose.ReadAll()) Add(verbose, "verbose", () => record.Message);
            ArrayList debug = new ArrayList();
            foreach (DebugRecord record in PowerShell.Streams.Debug.ReadAll()) Add(debug, "debug", () => record.Message);

            OrderedDictionary result = new OrderedDictionary();
            result["output"] = new RawJson(output);
            result["errors"] = errors;
            result["warnings"] = warnings;
            result["verbose"] = verbose;
            result["debug"] = debug;
            result["information"] = information;
            result["hadErrors"] = PowerShell.HadErrors;
            // A prompt's answer stops the call by unwinding it (TerminateException), which the engine
            // may end as completed rather than stopped.
            result["stopped"] = (stopped && !_stoppedWhenFull) || (_prompter != null && _prompter.StoppedCall);
            result["durationMs"] = _watch.ElapsedMilliseconds;
            if (_first > 0 || Select != null)
            {
                OrderedDictionary shape = new OrderedDictionary();
                shape["moreResults"] = _moreResults;
                if (Select != null)
                {
                    shape["types"] = _shapeTypes;
                    shape["unknownProperties"] = _unknownProperties;
                    if (_uncomputed > 0) shape["uncomputed"] = _uncomputed;
                }
                result["shape"] = shape;
            }
            if (_budget.Full)
            {
                OrderedDictionary cut = new OrderedDictionary();
                cut["items"] = _budget.Items;
                cut["bytes"] = _budget.Bytes;
                cut["shortenedFirst"] = _budget.ShortenedFirst;
                if (_stoppedWhenFull) cut["stopped"] = true;
                result["outputCut"] = cut;
            }
            if (_budget.Media.Count > 0) result["media"] = _budget.Media;
            if (Limits != null && Limits.Dropped.Count > 0) result["droppedRecords"] = Limits.Dropped;
            // A computed column that ignored the stop at its time bound still runs in the worker
            // runspace: no later call can run there, and svc must not send one (stdio has no reset
            // between calls to find it).
            if (_worker.RunspaceAvailability != RunspaceAvailability.Available) result["runspaceBusy"] = true;
            return JsonValue.SuccessFrame(Id, result);
        }

        // A record kept as it is without limits, else within them (CallLimits.Keep).
        private void Add(ArrayList into, string stream, Func<object> make)
        {
            if (Limits == null) into.Add(make());
            else Limits.Keep(into, stream, make);
        }

        /// <summary>
        /// Throws unless every <c>Path</c> and <c>LiteralPath</c> argument, or the current location when
        /// there is none, is of the provider whose dynamic parameters the call gives (protocol §4.4).
        /// PowerShell asks the provider of the first path for dynamic parameters, so a path of another
        /// provider would bind the caller's arguments to that provider's parameters of the same names,
        /// which svc never described or offered.
        /// </summary>
        private static void RequireProvider(Runspace worker, Hashtable provider, Hashtable parameters)
        {
            string name = provider["name"] as string;
            if (string.IsNullOrEmpty(name)) throw new ArgumentException("The invoke provider has no name.");
            object[] given = provider["arguments"] as object[];
            string arguments = given == null || given.Length == 0 ? "its dynamic arguments" : "argument " + string.Join(", ", Array.ConvertAll(given, a => "'" + a + "'"));
            PathIntrinsics paths = worker.SessionStateProxy.Path;
            bool anyPath = false;
            if (parameters != null)
            {
                foreach (DictionaryEntry entry in parameters)
                {
                    string key = (string)entry.Key;
                    if (!string.Equals(key, "Path", StringComparison.OrdinalIgnoreCase) && !string.Equals(key, "LiteralPath", StringComparison.OrdinalIgnoreCase)) continue;
                    object[] values = entry.Value as object[] ?? new object[] { entry.Value };
                    foreach (object value in values)
                    {
                        string path = LanguagePrimitives.ConvertTo<string>(value) ?? "";
                        anyPath = true;
                        string shown = Shown(path);
                        ProviderInfo found;
                        PSDriveInfo drive;
                        try
                        {
                            paths.GetUnresolvedProviderPathFromPSPath(path, out found, out drive);
                        }
                        catch (Exception e)
                        {
                            // The exception's message repeats the drive or provider name, as long as the path.
                            throw new ArgumentException("The " + name + " provider's " + arguments + " cannot be used with path '" + shown + "': its provider is unknown (" + Shown(e.Message) + ").");
                        }
                        if (!string.Equals(found.Name, name, StringComparison.OrdinalIgnoreCase))
                        {
                            throw new ArgumentException("The " + name + " provider's " + arguments + " cannot be used with path '" + shown + "', which is in the " + found.Name + " provider.");
                        }
                    }
                }
            }
            if (anyPath) return;
            PathInfo location = paths.CurrentLocation;
            if (!string.Equals(location.Provider.Name, name, StringComparison.OrdinalIgnoreCase))
            {
                throw new ArgumentException("The " + name + " provider's " + arguments + " need a Path or LiteralPath: the current location is in the " + location.Provider.Name + " provider.");
            }
        }

        // A caller's path, or a message quoting it, as a refusal shows it: its first 200 characters.
        private static string Shown(string text)
        {
            return text.Length > 200 ? text.Substring(0, 200) + "…" : text;
        }

        private static bool Contains(object[] names, string name)
        {
            if (names == null) return false;
            foreach (object candidate in names)
            {
                if (string.Equals(candidate as string, name, StringComparison.OrdinalIgnoreCase)) return true;
            }
            return false;
        }

        private static PSCredential NewCredential(object value)
        {
            IDictionary table = value as IDictionary;
            if (table == null) throw new ArgumentException("A credential must be an object with UserName and Password.");
            // NetworkCredential accepts an empty password, which ConvertTo-SecureString -String rejects.
            string user = LanguagePrimitives.ConvertTo<string>(table["UserName"]) ?? "";
            string password = LanguagePrimitives.ConvertTo<string>(table["Password"]) ?? "";
            return new PSCredential(user, new NetworkCredential("", password).SecurePassword);
        }

        /// <summary>Frees the pipeline.</summary>
        public void Dispose()
        {
            PowerShell.Dispose();
        }
    }
}
