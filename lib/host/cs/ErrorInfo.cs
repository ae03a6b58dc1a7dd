// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): error records as the
// ErrorInfo objects of docs/worker-protocol.md.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Management.Automation;
using System.Management.Automation.Host;

namespace Svc.Host
{
    /// <summary>Error records reported to svc.</summary>
    public static class ErrorInfo
    {
        /// <summary>The record an exception carries, else a new one with the exception's type name as its id.</summary>
        public static ErrorRecord RecordOf(Exception exception)
        {
            IContainsErrorRecord carrier = exception as IContainsErrorRecord;
            if (carrier != null)
            {
                ErrorRecord record = null;
                try { record = carrier.ErrorRecord; } catch (Exception) { record = null; }
                if (record != null) return record;
            }
            return new ErrorRecord(exception, exception.GetType().Name, ErrorCategory.NotSpecified, null);
        }

        /// <summary>
        /// The record's message. Outside a call's prompter (a startup script, a reset, a host without
        /// one) the worker host has no UI, so a prompt fails at once with a HostException whose text
        /// names what was asked only for confirmations (Read-Host's prompt is among the command's
        /// arguments instead); the message quotes what was asked and says nobody can answer it there,
        /// once: the host's own advice (a console) does not apply, and no advice on going ahead
        /// without the answer is given.
        /// </summary>
        public static string MessageOf(ErrorRecord record, string invoked = null, Hashtable arguments = null)
        {
            string message = record.ToString();
            Exception exception = record.Exception;
            while (exception != null && !(exception is HostException)) exception = exception.InnerException;
            if (exception == null) return message;
            InvocationInfo invocation = record.InvocationInfo;
            string command = invocation != null && invocation.MyCommand != null ? invocation.MyCommand.Name : null;
            if (string.IsNullOrEmpty(command)) command = "The command";
            string statement = invocation != null && invocation.Line != null ? invocation.Line.Trim() : "";
            string at = statement.Length > 0 ? " at: " + statement + "," : ",";
            const string Why = " but nobody can answer a prompt there: svc asks a user only while a tool call runs.";
            string confirmation = ConfirmationOf(exception.Message);
            if (confirmation != null) return command + " asked for confirmation (\"" + confirmation + "\")" + at + Why;
            // A record does not keep the arguments of a command svc invoked itself; the call's are
            // those when the prompting command is the one invoked.
            if (!string.Equals(command, invoked, StringComparison.OrdinalIgnoreCase)) arguments = null;
            // A record from a runspace of the command's own (ForEach-Object -Parallel) has lost its
            // bound parameters: an unknown prompt is left to the statement quoted, never said absent.
            string prompt = ArgumentOf(invocation, arguments, "Prompt") ?? ArgumentOf(invocation, arguments, "Message");
            string asked = prompt != null ? " (prompt \"" + prompt + "\")" : "";
            return command + " asked for user input" + asked + at + Why;
        }

        /// <summary>What a confirmation asked, from the HostException's text; null when it names nothing.</summary>
        private static string ConfirmationOf(string text)
        {
            const string Marker = "with the following message:";
            int index = text == null ? -1 : text.IndexOf(Marker, StringComparison.Ordinal);
            if (index < 0) return null;
            string asked = text.Substring(index + Marker.Length).Trim();
            return asked.Length > 0 ? asked : null;
        }

        /// <summary>A string argument of the prompting command (Read-Host's -Prompt), bound or given; else null.</summary>
        private static string ArgumentOf(InvocationInfo invocation, Hashtable arguments, string name)
        {
            if (invocation != null && invocation.BoundParameters != null)
            {
                foreach (var entry in invocation.BoundParameters)
                {
                    if (string.Equals(entry.Key, name, StringComparison.OrdinalIgnoreCase)) return TextOf(entry.Value);
                }
            }
            if (arguments == null) return null;
            foreach (DictionaryEntry entry in arguments)
            {
                if (string.Equals(entry.Key as string, name, StringComparison.OrdinalIgnoreCase)) return TextOf(entry.Value);
            }
            return null;
        }

        // Read-Host's -Prompt takes the remaining arguments, so it is bound as a list, which Read-Host
        // joins with spaces.
        private static string TextOf(object value)
        {
            if (value is PSObject) value = ((PSObject)value).BaseObject;
            string text = value as string;
            if (text == null && value is IEnumerable)
            {
                List<string> parts = new List<string>();
                foreach (object item in (IEnumerable)value) parts.Add(LanguagePrimitives.ConvertTo<string>(item));
                text = string.Join(" ", parts);
            }
            return string.IsNullOrEmpty(text) ? null : text;
        }

        /// <summary>The ErrorInfo object of a record: strings, numbers, booleans and nulls only.</summary>
        public static OrderedDictionary From(ErrorRecord record, bool terminating, string invoked = null, Hashtable arguments = null)
        {
            InvocationInfo invocation = record.InvocationInfo;
            OrderedDictionary position = null;
            if (invocation != null && invocation.ScriptLineNumber > 0)
            {
                position = new OrderedDictionary();
                position["scriptName"] = NonEmpty(invocation.ScriptName);
                position["line"] = invocation.ScriptLineNumber;
                position["column"] = invocation.OffsetInLine;
                position["text"] = NonEmpty(invocation.Line);
            }
            ErrorCategoryInfo category = record.CategoryInfo;
            OrderedDictionary info = new OrderedDictionary();
            info["message"] = MessageOf(record, invoked, arguments);
            info["fullyQualifiedErrorId"] = NonEmpty(record.FullyQualifiedErrorId);
            info["category"] = category.Category.ToString();
            info["targetName"] = NonEmpty(category.TargetName);
            info["targetType"] = NonEmpty(category.TargetType);
            info["exceptionType"] = record.Exception != null ? record.Exception.GetType().FullName : null;
            info["scriptStackTrace"] = NonEmpty(record.ScriptStackTrace);
            info["terminating"] = terminating;
            info["position"] = position;
            return info;
        }

        internal static string NonEmpty(string text)
        {
            return string.IsNullOrEmpty(text) ? null : text;
        }
    }
}
