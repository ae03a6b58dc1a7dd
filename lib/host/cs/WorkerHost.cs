// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the host of every worker
// runspace. With it PowerShell's own prompting code runs (ShouldProcess, Read-Host, PromptForChoice,
// $Host.UI.Prompt) and reaches svc while an interactive call runs (Prompter.cs, protocol §4.4).
// Otherwise it behaves as the engine's DefaultHost that the runspaces had before: its UI is null
// outside interactive calls (the engine reads that live, e.g. -Debug turns verbose into Inquire only
// with a UI), and every prompt fails at once with the exception the engine would throw itself.
using System;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Globalization;
using System.Management.Automation;
using System.Management.Automation.Host;
using System.Management.Automation.Runspaces;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Security;

namespace Svc.Host
{
    /// <summary>The host of a worker runspace: <c>$Host.Name</c> is "svc".</summary>
    public sealed class WorkerHost : PSHost
    {
        private static readonly ConditionalWeakTable<Runspace, WorkerHost> Hosts = new ConditionalWeakTable<Runspace, WorkerHost>();
        private readonly WorkerHostUI _ui = new WorkerHostUI();
        private readonly Guid _instanceId = Guid.NewGuid();
        // Like DefaultHost: the cultures of the thread that created the runspace, which every pipeline
        // of the runspace then runs with.
        private readonly CultureInfo _culture = CultureInfo.CurrentCulture;
        private readonly CultureInfo _uiCulture = CultureInfo.CurrentUICulture;
        private volatile bool _settled;

        private WorkerHost()
        {
        }

        /// <summary>
        /// A runspace over <paramref name="state"/> with a host of its own, not opened. Call
        /// <see cref="Settle"/> once it is open.
        /// </summary>
        public static Runspace CreateRunspace(InitialSessionState state)
        {
            WorkerHost host = new WorkerHost();
            Runspace runspace = RunspaceFactory.CreateRunspace(host, state);
            Hosts.Add(runspace, host);
            return runspace;
        }

        /// <summary>The host of a runspace <see cref="CreateRunspace"/> made, else null.</summary>
        public static WorkerHost Of(Runspace runspace)
        {
            WorkerHost host;
            return runspace != null && Hosts.TryGetValue(runspace, out host) ? host : null;
        }

        /// <summary>
        /// Ends the opening of the runspace: the engine took its UI when it created the runspace's
        /// engine host (at open), and from now on <see cref="UI"/> is null outside interactive calls.
        /// </summary>
        public void Settle()
        {
            _settled = true;
        }

        /// <summary>The prompts of the interactive call running now, or null (set by Invocation for every call).</summary>
        internal Prompter Prompter
        {
            get { return _ui.Prompter; }
            set { _ui.Prompter = value; }
        }

        /// <inheritdoc/>
        public override string Name { get { return "svc"; } }

        /// <inheritdoc/>
        public override Version Version { get { return PSVersionInfo.PSVersion; } }

        /// <inheritdoc/>
        public override Guid InstanceId { get { return _instanceId; } }

        /// <inheritdoc/>
        public override PSHostUserInterface UI { get { return !_settled || _ui.Prompter != null ? _ui : null; } }

        /// <inheritdoc/>
        public override CultureInfo CurrentCulture { get { return _culture; } }

        /// <inheritdoc/>
        public override CultureInfo CurrentUICulture { get { return _uiCulture; } }

        /// <inheritdoc/>
        public override void SetShouldExit(int exitCode)
        {
        }

        /// <inheritdoc/>
        public override void EnterNestedPrompt()
        {
            throw new NotSupportedException("svc's worker host has no nested prompt.");
        }

        /// <inheritdoc/>
        public override void ExitNestedPrompt()
        {
            throw new NotSupportedException("svc's worker host has no nested prompt.");
        }

        /// <inheritdoc/>
        public override void NotifyBeginApplication()
        {
        }

        /// <inheritdoc/>
        public override void NotifyEndApplication()
        {
        }
    }

    /// <summary>
    /// The worker host's UI: output is discarded (the streams are collected from the pipeline, as
    /// before), RawUI is null, and prompts go to the running call's <see cref="Prompter"/>, or fail as
    /// the engine fails them for a host without a UI.
    /// </summary>
    public sealed class WorkerHostUI : PSHostUserInterface, IHostUISupportsMultipleChoiceSelection
    {
        private volatile Prompter _prompter;

        internal Prompter Prompter
        {
            get { return _prompter; }
            set { _prompter = value; }
        }

        /// <inheritdoc/>
        public override PSHostRawUserInterface RawUI { get { return null; } }

        /// <inheritdoc/>
        public override string ReadLine()
        {
            Prompter prompter = _prompter;
            if (prompter == null) throw NotInteractive.Any();
            return prompter.ReadLine();
        }

        /// <inheritdoc/>
        public override SecureString ReadLineAsSecureString()
        {
            Prompter prompter = _prompter;
            if (prompter == null) throw NotInteractive.Any();
            throw prompter.Secret("a secure string");
        }

        /// <inheritdoc/>
        public override Dictionary<string, PSObject> Prompt(string caption, string message, Collection<FieldDescription> descriptions)
        {
            Prompter prompter = _prompter;
            if (prompter == null) throw NotInteractive.Prompt(message);
            return prompter.Fields(caption, message, descriptions);
        }

        /// <inheritdoc/>
        public override int PromptForChoice(string caption, string message, Collection<ChoiceDescription> choices, int defaultChoice)
        {
            Prompter prompter = _prompter;
            if (prompter == null) throw NotInteractive.Prompt(message);
            return prompter.Choice(caption, message, choices, defaultChoice);
        }

        /// <inheritdoc/>
        public Collection<int> PromptForChoice(string caption, string message, Collection<ChoiceDescription> choices, IEnumerable<int> defaultChoices)
        {
            Prompter prompter = _prompter;
            if (prompter == null) throw NotInteractive.Prompt(message);
            return prompter.Choices(caption, message, choices, defaultChoices);
        }

        /// <inheritdoc/>
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName)
        {
            return PromptForCredential(caption, message, userName, targetName, PSCredentialTypes.Default, PSCredentialUIOptions.Default);
        }

        /// <inheritdoc/>
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName, PSCredentialTypes allowedCredentialTypes, PSCredentialUIOptions options)
        {
            Prompter prompter = _prompter;
            if (prompter == null) throw NotInteractive.Prompt(message);
            throw prompter.Secret("a credential");
        }

        /// <inheritdoc/>
        public override void Write(string value)
        {
        }

        /// <inheritdoc/>
        public override void Write(ConsoleColor foregroundColor, ConsoleColor backgroundColor, string value)
        {
        }

        /// <inheritdoc/>
        public override void WriteLine(string value)
        {
        }

        /// <inheritdoc/>
        public override void WriteErrorLine(string value)
        {
        }

        /// <inheritdoc/>
        public override void WriteDebugLine(string message)
        {
        }

        /// <inheritdoc/>
        public override void WriteProgress(long sourceId, ProgressRecord record)
        {
        }

        /// <inheritdoc/>
        public override void WriteVerboseLine(string message)
        {
        }

        /// <inheritdoc/>
        public override void WriteWarningLine(string message)
        {
        }
    }

    /// <summary>
    /// The exceptions the engine throws for a prompt when its host has no UI, word for word (its own
    /// resource strings, read once): the errors of non-interactive calls stay as they were.
    /// </summary>
    internal static class NotInteractive
    {
        private static readonly string AnyText = Resource("HostInterfaceExceptionsStrings", "HostFunctionNotImplemented",
            "A command that prompts the user failed because the host program or the command type does not support user interaction. Try a host program that supports user interaction, such as the PowerShell Console or PowerShell ISE, and remove prompt-related commands from command types that do not support user interaction.");
        private static readonly string PromptFormat = Resource("HostInterfaceExceptionsStrings", "HostFunctionPromptNotImplemented",
            "A command that prompts the user failed because the host program or the command type does not support user interaction. The host was attempting to request confirmation with the following message: {0}");

        /// <summary>What ReadLine and ReadLineAsSecureString throw.</summary>
        internal static HostException Any()
        {
            return new HostException(AnyText, null, "HostFunctionNotImplemented", ErrorCategory.NotImplemented);
        }

        /// <summary>What Prompt, PromptForChoice and PromptForCredential throw for <paramref name="message"/>.</summary>
        internal static HostException Prompt(string message)
        {
            return new HostException(PromptText(message), null, "HostFunctionNotImplemented", ErrorCategory.NotImplemented);
        }

        /// <summary>The text of <see cref="Any"/>.</summary>
        internal static string AnyMessage { get { return AnyText; } }

        /// <summary>The text of <see cref="Prompt"/> for <paramref name="message"/>.</summary>
        internal static string PromptText(string message)
        {
            return string.Format(CultureInfo.CurrentCulture, PromptFormat, message);
        }

        /// <summary>A resource string of the engine (its internal resource classes), else <paramref name="fallback"/>.</summary>
        internal static string Resource(string type, string name, string fallback)
        {
            try
            {
                Type resources = typeof(PSObject).Assembly.GetType("System.Management.Automation." + type);
                PropertyInfo property = resources == null ? null : resources.GetProperty(name, BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic);
                string text = property == null ? null : property.GetValue(null) as string;
                return string.IsNullOrEmpty(text) ? fallback : text;
            }
            catch (Exception)
            {
                return fallback;
            }
        }
    }
}
