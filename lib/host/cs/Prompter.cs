// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the prompts of one
// interactive call (protocol §4.4, `interactive`). Each prompt the command makes on its pipeline
// thread becomes a `prompt` frame, which the slot's loop sends; the thread then waits for svc's
// `answer` notification (or the call's stop). Any answer but an accepted one stops the command,
// as Ctrl+C at a console prompt does, and so does a question svc does not ask (a secret, which MCP
// forbids asking for through a form, or a question too large to send) and an answer the command
// cannot use: nobody answered what it asked.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Collections.Specialized;
using System.Diagnostics;
using System.Globalization;
using System.Management.Automation;
using System.Management.Automation.Host;
using System.Threading;

namespace Svc.Host
{
    /// <summary>The prompts of one interactive call.</summary>
    public sealed class Prompter
    {
        private static readonly string[] SuspendLabels = Labels(
            NotInteractive.Resource("CommandBaseStrings", "PauseLabel", "&Suspend"),
            NotInteractive.Resource("InternalHostUserInterfaceStrings", "ShouldContinueSuspendLabel", "&Suspend"));
        private readonly long _id;
        private readonly string _command;
        private readonly Action<string> _send;
        private readonly long _textBytes;
        private readonly long _frameBytes;
        private readonly Action _stop;
        private readonly Func<bool> _onPipelineThread;
        private readonly object _gate = new object();
        // One prompt at a time, whichever thread asks (ForEach-Object -Parallel shares the host).
        private readonly object _one = new object();
        private int _seq;
        private int _waiting;
        private Hashtable _answer;
        private bool _stopped;
        private volatile bool _stoppedCall;

        /// <summary>
        /// Prompts of call <paramref name="id"/>, which runs <paramref name="command"/>: frames go out
        /// through <paramref name="send"/> (on the pipeline thread; the slot's loop writes them),
        /// strings cut to <paramref name="textBytes"/>, a whole frame at most
        /// <paramref name="frameBytes"/> (0: unbounded); <paramref name="stop"/> asks the engine to stop
        /// the call, and <paramref name="onPipelineThread"/> says whether the current thread is the
        /// call's own.
        /// </summary>
        internal Prompter(long id, string command, Action<string> send, long textBytes, long frameBytes, Action stop, Func<bool> onPipelineThread)
        {
            _onPipelineThread = onPipelineThread;
            _id = id;
            _command = command;
            _send = send;
            _textBytes = textBytes;
            _frameBytes = frameBytes;
            _stop = stop;
        }

        /// <summary>svc's answer (the params of an <c>answer</c> notification); one to no prompt waiting is ignored.</summary>
        public void Answer(Hashtable parameters)
        {
            object seq = parameters["seq"];
            if (!(seq is int || seq is long)) return;
            lock (_gate)
            {
                if (_waiting == 0 || Convert.ToInt64(seq) != _waiting) return;
                _answer = parameters;
                Monitor.PulseAll(_gate);
            }
        }

        /// <summary>The call is being stopped: a prompt waiting ends, and none is asked any more.</summary>
        public void Stop()
        {
            lock (_gate)
            {
                _stopped = true;
                Monitor.PulseAll(_gate);
            }
        }

        /// <summary>A prompt for a secret (<paramref name="what"/>: "a credential"), which is never asked.</summary>
        public Exception Secret(string what)
        {
            return Refuse("asked for " + what + ", which svc never asks a user for (MCP forbids asking for a secret through a form)");
        }

        // What the command asked cannot be answered (<paramref name="why"/> says so, after the command's
        // name: "asked for a credential, which …"): svc is told by a `refused` frame, which wants no
        // answer, and the command stops, since nobody answered it.
        private Exception Refuse(string why)
        {
            OrderedDictionary frame = Frame("refused", "", why, null, null, false, null);
            lock (_gate) frame["seq"] = ++_seq;
            _send(JsonValue.Serialize(frame));
            return StopCall();
        }

        /// <summary>Whether a prompt's answer, or a question or answer refused, stopped the call.</summary>
        public bool StoppedCall { get { return _stoppedCall; } }

        // Stops the whole call, as Ctrl+C at a console prompt would: later prompts stop at once and
        // the prompting thread unwinds by TerminateException, the debugger's "terminate the command".
        // Unlike PipelineStoppedException, which the engine's host wrapper turns into a default
        // answer (-1, null) for a script's own $Host.UI call, so that statements up to the next
        // command still run, and which a trap can continue from, no trap or catch handles it and no
        // later statement runs; only finally blocks do. The engine is asked to stop the pipeline only
        // when another thread asks (ForEach-Object -Parallel): the pipeline's own thread is here, and
        // a stop racing its unwinding turns the TerminateException into a PipelineStoppedException.
        private Exception StopCall()
        {
            lock (_gate) _stopped = true;
            _stoppedCall = true;
            if (!_onPipelineThread()) _stop();
            return new TerminateException();
        }

        /// <summary>Read-Host without -Prompt: one line of text.</summary>
        public string ReadLine()
        {
            OrderedDictionary field = new OrderedDictionary();
            field["name"] = "answer";
            field["label"] = "Answer";
            field["help"] = "";
            field["type"] = "string";
            Hashtable answer = Ask(Frame("text", "", "", null, null, false, new ArrayList { field }));
            object value = Value(answer, "answer");
            return value == null ? "" : LanguagePrimitives.ConvertTo<string>(value);
        }

        /// <summary>PromptForChoice: a confirmation when ShouldProcess, ShouldContinue or an Inquire preference asks, else a choice.</summary>
        public int Choice(string caption, string message, Collection<ChoiceDescription> choices, int defaultChoice)
        {
            if (choices == null || choices.Count == 0) throw new ArgumentException("PromptForChoice was given no choices.", "choices");
            if (defaultChoice < -1 || defaultChoice >= choices.Count) throw new ArgumentOutOfRangeException("defaultChoice", defaultChoice, "The default choice is not one of the choices.");
            bool confirm = IsConfirmation();
            List<int> shown = Shown(choices, confirm);
            Hashtable answer = Ask(ChoiceFrame(confirm ? "confirm" : "choice", caption, message, choices, shown, defaultChoice < 0 ? new int[0] : new[] { defaultChoice }, false));
            List<int> picked = Picked(answer, shown);
            if (picked == null || picked.Count != 1) throw Refuse("got an answer that picks no single one of its choices");
            return picked[0];
        }

        /// <summary>PromptForChoice allowing several choices (IHostUISupportsMultipleChoiceSelection).</summary>
        public Collection<int> Choices(string caption, string message, Collection<ChoiceDescription> choices, IEnumerable<int> defaultChoices)
        {
            if (choices == null || choices.Count == 0) throw new ArgumentException("PromptForChoice was given no choices.", "choices");
            List<int> defaults = new List<int>();
            if (defaultChoices != null)
            {
                foreach (int index in defaultChoices)
                {
                    if (index < 0 || index >= choices.Count) throw new ArgumentOutOfRangeException("defaultChoices", index, "A default choice is not one of the choices.");
                    if (!defaults.Contains(index)) defaults.Add(index);
                }
            }
            List<int> shown = Shown(choices, false);
            Hashtable answer = Ask(ChoiceFrame("choice", caption, message, choices, shown, defaults.ToArray(), true));
            List<int> picked = Picked(answer, shown);
            if (picked == null) throw Refuse("got an answer that picks none of its choices");
            return new Collection<int>(picked);
        }

        /// <summary>$Host.UI.Prompt, and Read-Host -Prompt (one string field): the values of the fields.</summary>
        public Dictionary<string, PSObject> Fields(string caption, string message, Collection<FieldDescription> descriptions)
        {
            if (descriptions == null || descriptions.Count == 0) throw new ArgumentException("Prompt was given no fields.", "descriptions");
            ArrayList fields = new ArrayList();
            Type[] types = new Type[descriptions.Count];
            string[] names = new string[descriptions.Count];
            for (int i = 0; i < descriptions.Count; i++)
            {
                FieldDescription description = descriptions[i];
                if (IsSecret(description)) throw Secret("a secret ('" + description.Name + "')");
                types[i] = FieldType(description);
                names[i] = Cut(description.Name);
                OrderedDictionary field = new OrderedDictionary();
                field["name"] = names[i];
                field["label"] = Cut(PlainLabel(string.IsNullOrEmpty(description.Label) ? description.Name : description.Label));
                field["help"] = Cut(description.HelpMessage);
                field["type"] = JsonType(types[i]);
                object initial = description.DefaultValue != null ? description.DefaultValue.BaseObject : null;
                if (initial is string) field["default"] = Cut((string)initial);
                else if (initial != null && JsonType(initial.GetType()) != "string") field["default"] = initial;
                fields.Add(field);
            }
            bool text = descriptions.Count == 1 && string.IsNullOrEmpty(caption) && string.IsNullOrEmpty(message) && types[0] == typeof(string);
            Hashtable answer = Ask(Frame(text ? "text" : "fields", caption, message, null, null, false, fields));
            Dictionary<string, PSObject> result = new Dictionary<string, PSObject>();
            for (int i = 0; i < descriptions.Count; i++)
            {
                object value = Value(answer, names[i]);
                if (value == null)
                {
                    PSObject initial = descriptions[i].DefaultValue;
                    if (initial == null) throw Refuse("got no answer for '" + names[i] + "' from its user");
                    result[descriptions[i].Name] = initial;
                    continue;
                }
                object converted;
                try
                {
                    converted = LanguagePrimitives.ConvertTo(value, types[i], CultureInfo.InvariantCulture);
                }
                catch (Exception)
                {
                    // What the user typed is theirs: it is not echoed to the caller.
                    throw Refuse("could not use its user's answer for '" + names[i] + "', which is not a " + types[i].Name);
                }
                result[descriptions[i].Name] = PSObject.AsPSObject(converted);
            }
            return result;
        }

        // Sends one prompt and waits for its answer, which is an accepted one: any other answer (the
        // user declined or cancelled, nobody answered in time, nobody can answer) stops the call, and so
        // does svc stopping it meanwhile.
        private Hashtable Ask(OrderedDictionary frame)
        {
            lock (_one)
            {
                lock (_gate)
                {
                    if (_stopped) throw new TerminateException();
                    _waiting = ++_seq;
                    _answer = null;
                    frame["seq"] = _seq;
                }
                string json = JsonValue.Serialize(frame);
                // Each string is cut, not their number: a prompt of thousands of choices would make a
                // frame larger than svc reads from a call.
                long bytes = System.Text.Encoding.UTF8.GetByteCount(json);
                if (_frameBytes > 0 && bytes > _frameBytes)
                {
                    lock (_gate) _waiting = 0;
                    throw Refuse("asked a question of " + bytes + " bytes, more than a call may send svc (" + _frameBytes + ", ShellConfiguration:MaxResultBytes), so it could not be put to its user");
                }
                _send(json);
                Hashtable answer;
                lock (_gate)
                {
                    while (_answer == null && !_stopped) Monitor.Wait(_gate);
                    _waiting = 0;
                    answer = _answer;
                    _answer = null;
                }
                if (answer == null) throw new TerminateException();
                if (Action(answer) != "accept") throw StopCall();
                return answer;
            }
        }

        private OrderedDictionary Frame(string kind, string caption, string message, ArrayList choices, int[] defaults, bool multiple, ArrayList fields)
        {
            OrderedDictionary frame = new OrderedDictionary();
            frame["type"] = "prompt";
            frame["id"] = _id;
            frame["seq"] = 0;
            frame["kind"] = kind;
            frame["command"] = Cut(_command);
            frame["caption"] = Cut(caption);
            frame["message"] = Cut(message);
            if (choices != null)
            {
                frame["choices"] = choices;
                frame["defaults"] = defaults;
                frame["multiple"] = multiple;
            }
            if (fields != null) frame["fields"] = fields;
            return frame;
        }

        private OrderedDictionary ChoiceFrame(string kind, string caption, string message, Collection<ChoiceDescription> choices, List<int> shown, int[] defaults, bool multiple)
        {
            ArrayList list = new ArrayList();
            foreach (int index in shown)
            {
                OrderedDictionary choice = new OrderedDictionary();
                choice["label"] = Cut(PlainLabel(choices[index].Label));
                choice["help"] = Cut(choices[index].HelpMessage);
                list.Add(choice);
            }
            List<int> positions = new List<int>();
            foreach (int index in defaults)
            {
                int position = shown.IndexOf(index);
                if (position >= 0) positions.Add(position);
            }
            return Frame(kind, caption, message, list, positions.ToArray(), multiple, null);
        }

        // The choices offered: all of them, but for a confirmation not Suspend (a nested prompt nobody
        // could use).
        private static List<int> Shown(Collection<ChoiceDescription> choices, bool confirm)
        {
            List<int> shown = new List<int>();
            for (int i = 0; i < choices.Count; i++)
            {
                if (confirm && Array.IndexOf(SuspendLabels, PlainLabel(choices[i].Label)) >= 0) continue;
                shown.Add(i);
            }
            return shown;
        }

        // The choices an accepted answer picks, as indexes of the prompt's own choices; null when it
        // picks none or one that is not among them.
        private static List<int> Picked(Hashtable answer, List<int> shown)
        {
            object given = answer["choices"];
            object[] list = given as object[];
            if (list == null && (given is int || given is long)) list = new[] { given };
            if (list == null) return null;
            List<int> picked = new List<int>();
            foreach (object item in list)
            {
                if (!(item is int || item is long) || Convert.ToInt64(item) < 0 || Convert.ToInt64(item) >= shown.Count) return null;
                int index = shown[Convert.ToInt32(item)];
                if (!picked.Contains(index)) picked.Add(index);
            }
            return picked;
        }

        private static string Action(Hashtable answer)
        {
            return answer["action"] as string ?? "";
        }

        private static object Value(Hashtable answer, string name)
        {
            Hashtable values = answer["values"] as Hashtable;
            return values == null ? null : values[name];
        }


        // True when PowerShell's own confirmation asks (ShouldProcess and ShouldContinue, and the
        // Inquire preferences, all through MshCommandRuntime.InquireHelper; Write-Debug's Inquire
        // through the engine host's DebugShouldContinue): its text is the operation's, its choices
        // PowerShell's Yes/No family. Only prompts pay for the stack walk.
        private static bool IsConfirmation()
        {
            StackFrame[] frames = new StackTrace(false).GetFrames();
            if (frames == null) return false;
            foreach (StackFrame frame in frames)
            {
                System.Reflection.MethodBase method = frame.GetMethod();
                if (method == null || method.DeclaringType == null) continue;
                string name = method.Name;
                string type = method.DeclaringType.Name;
                if ((name == "InquireHelper" && type == "MshCommandRuntime") || (name == "DebugShouldContinue" && type == "InternalHostUserInterface")) return true;
            }
            return false;
        }

        // A field for a secret: its type names SecureString or PSCredential, or its .NET type holds one
        // anywhere (an array, List[SecureString], Nullable...): such a field was asked as a plain string
        // form field, the name check seeing only "List`1".
        private static bool IsSecret(FieldDescription description)
        {
            foreach (string name in new[] { description.ParameterTypeName, description.ParameterTypeFullName })
            {
                if (string.IsNullOrEmpty(name)) continue;
                string last = name.Substring(name.LastIndexOf('.') + 1).TrimEnd(']', '[');
                if (string.Equals(last, "SecureString", StringComparison.OrdinalIgnoreCase) || string.Equals(last, "PSCredential", StringComparison.OrdinalIgnoreCase)) return true;
            }
            return HoldsSecret(FieldType(description), 0);
        }

        private static bool HoldsSecret(Type type, int depth)
        {
            if (type == null || depth > 8) return false;
            if (type == typeof(System.Security.SecureString) || type == typeof(PSCredential)) return true;
            if (type.HasElementType && HoldsSecret(type.GetElementType(), depth + 1)) return true;
            if (type.IsGenericType)
            {
                foreach (Type argument in type.GetGenericArguments())
                {
                    if (HoldsSecret(argument, depth + 1)) return true;
                }
            }
            return false;
        }

        // The .NET type a field's answer becomes; string when it names none PowerShell knows.
        private static Type FieldType(FieldDescription description)
        {
            Type type = null;
            try
            {
                if (!string.IsNullOrEmpty(description.ParameterAssemblyFullName)) type = Type.GetType(description.ParameterAssemblyFullName, false);
                if (type == null && !string.IsNullOrEmpty(description.ParameterTypeFullName)) LanguagePrimitives.TryConvertTo<Type>(description.ParameterTypeFullName, out type);
            }
            catch (Exception)
            {
                type = null;
            }
            return type ?? typeof(string);
        }

        private static string JsonType(Type type)
        {
            if (type == typeof(bool) || type == typeof(SwitchParameter)) return "boolean";
            if (type == typeof(int) || type == typeof(long) || type == typeof(short) || type == typeof(byte) || type == typeof(sbyte) ||
                type == typeof(uint) || type == typeof(ulong) || type == typeof(ushort) || type == typeof(System.Numerics.BigInteger)) return "integer";
            if (type == typeof(double) || type == typeof(float) || type == typeof(decimal)) return "number";
            return "string";
        }

        // A label without its hotkey marker ("&Yes" is shown "Yes").
        private static string PlainLabel(string label)
        {
            if (string.IsNullOrEmpty(label)) return "";
            int marker = label.IndexOf('&');
            return marker < 0 ? label : label.Remove(marker, 1);
        }

        private static string[] Labels(params string[] labels)
        {
            for (int i = 0; i < labels.Length; i++) labels[i] = PlainLabel(labels[i]);
            return labels;
        }

        private string Cut(string text)
        {
            if (text == null) return "";
            return _textBytes > 0 ? TextCut.CutMiddle(text, _textBytes) : text;
        }
    }
}
