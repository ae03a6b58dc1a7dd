// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): error records as the
// ErrorInfo objects of docs/worker-protocol.md.
using System;
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
        /// The record's message. The worker runspace has no host UI, so a prompt fails at once with a
        /// HostException whose text names the prompt only for confirmations (Read-Host's prompt is not in
        /// it at all); the statement that prompted is known, so the message quotes it, says why it failed,
        /// and what to do instead.
        /// </summary>
        public static string MessageOf(ErrorRecord record)
        {
            string message = record.ToString();
            Exception exception = record.Exception;
            while (exception != null && !(exception is HostException)) exception = exception.InnerException;
            if (exception == null) return message;
            InvocationInfo invocation = record.InvocationInfo;
            string command = invocation != null && invocation.MyCommand != null ? invocation.MyCommand.Name : null;
            if (string.IsNullOrEmpty(command)) command = "The command";
            string statement = invocation != null && invocation.Line != null ? invocation.Line.Trim() : "";
            string asked = statement.Length > 0 ? " (at: " + statement + ")" : "";
            return command + " asked for user input" + asked +
                ", but svc runs commands non-interactively: give the value as a parameter, or -Confirm:$false for a confirmation. " +
                message;
        }

        /// <summary>The ErrorInfo object of a record: strings, numbers, booleans and nulls only.</summary>
        public static OrderedDictionary From(ErrorRecord record, bool terminating)
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
            info["message"] = MessageOf(record);
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
