// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): the members of PowerShell's
// engine and of .NET that are not public API and that the host reads to put a worker back after a
// call, each looked up here once per process, when the process starts (host.ps1 reads Missing
// before slot 0 says hello). A later PowerShell or .NET may rename or drop any of them, and a reset
// that cannot see what a call left behind (a runspace it left open, an AppContext switch it set)
// would hand it to the next caller. So a process that lacks any of them never carries state from one
// call to the next: its hello names them, svc opens no second worker in it, and every reset retires
// it (RetireReason; docs/runspaces.md, "When PowerShell changes underneath"). The engine's resource
// strings (WorkerHost.cs) and a validation attribute's kind (discovery.ps1) are read too, but each has
// a fallback and neither holds a call's state, so they are not here.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Collections.Specialized;
using System.Management.Automation;
using System.Management.Automation.Runspaces;
using System.Reflection;

namespace Svc.Host
{
    /// <summary>The non-public members a reset reads, found once per process; null when missing.</summary>
    public static class EngineMembers
    {
        private const BindingFlags Instance = BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public;
        private const BindingFlags Static = BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public;
        private const string ListVersionName = "_version";

        // First, as the lookups below add to it while the class initializes, in the order written.
        private static readonly List<string> Lost = new List<string>();

        // .NET's.
        /// <summary>AppContext's data (AppContext.SetData): process-wide, put back after every call.</summary>
        public static readonly FieldInfo AppContextData = Field(typeof(AppContext), "s_dataStore", Static);
        /// <summary>AppContext's switches (AppContext.SetSwitch).</summary>
        public static readonly FieldInfo AppContextSwitches = Field(typeof(AppContext), "s_switches", Static);
        /// <summary>The change counters of the collections startup left in variables (ChangeCounters.cs).</summary>
        public static readonly FieldInfo HashtableVersion = Field(typeof(Hashtable), "_version", BindingFlags.Instance | BindingFlags.NonPublic);
        /// <summary>See <see cref="HashtableVersion"/>.</summary>
        public static readonly FieldInfo ArrayListVersion = Field(typeof(ArrayList), "_version", BindingFlags.Instance | BindingFlags.NonPublic);
        /// <summary>The Hashtable inside an OrderedDictionary.</summary>
        public static readonly FieldInfo OrderedTable = Field(typeof(OrderedDictionary), "_objectsTable", BindingFlags.Instance | BindingFlags.NonPublic);
        /// <summary>The ArrayList inside an OrderedDictionary.</summary>
        public static readonly FieldInfo OrderedArray = Field(typeof(OrderedDictionary), "_objectsArray", BindingFlags.Instance | BindingFlags.NonPublic);

        // The engine's.
        /// <summary>Every runspace of the process, to find one a call left open (ProcessState.cs).</summary>
        public static readonly PropertyInfo RunspaceList = Property(typeof(Runspace), "RunspaceList", Static);
        /// <summary>A custom object's own members (StartupObjects.cs).</summary>
        public static readonly PropertyInfo InstanceMembers = Property(typeof(PSObject), "InstanceMembers", Instance);
        /// <summary>The ordered dictionary inside <see cref="InstanceMembers"/>, whose counter moves when a member is added.</summary>
        public static readonly FieldInfo InstanceMemberTable = Field(InstanceMembers?.PropertyType, "_members", Instance);
        /// <summary>Which runspaces a PowerShell class has a session state in (ClassStatics.cs).</summary>
        public static readonly FieldInfo ClassSessionStates = Field(EngineType("System.Management.Automation.Internal.SessionStateKeeper"), "_stateMap", BindingFlags.Instance | BindingFlags.NonPublic);
        /// <summary>The table of $PSStyle.FileInfo.Extension, which has no setter (StyleState.cs).</summary>
        public static readonly FieldInfo FileExtensionTable = Field(Property(Property(typeof(PSStyle), "FileInfo", Instance)?.PropertyType, "Extension", Instance)?.PropertyType, "_extensionDictionary", Instance);

        private static readonly Type LocalRunspace = EngineType("System.Management.Automation.Runspaces.LocalRunspace");
        /// <summary>A runspace's transcripts (Start-Transcript), stopped after every call (EngineState.cs).</summary>
        public static readonly PropertyInfo TranscriptionData = Property(LocalRunspace, "TranscriptionData", Instance);
        /// <summary>See <see cref="TranscriptionData"/>.</summary>
        public static readonly PropertyInfo Transcripts = Property(TranscriptionData?.PropertyType, "Transcripts", Instance);
        /// <summary>A runspace's jobs, counted by the reset's fingerprint (StateFingerprint.cs).</summary>
        public static readonly PropertyInfo JobRepository = Property(LocalRunspace, "JobRepository", Instance);

        /// <summary>SessionState.Internal: the engine's side of a session state.</summary>
        public static readonly PropertyInfo SessionStateInternal = Property(typeof(SessionState), "Internal", Instance);
        private static readonly Type InternalState = SessionStateInternal?.PropertyType;
        /// <summary>The engine's execution context of a session state.</summary>
        public static readonly PropertyInfo ExecutionContext = Property(InternalState, "ExecutionContext", Instance);
        /// <summary>The global scope of a session state (variables, functions, aliases, drives, strict mode).</summary>
        public static readonly PropertyInfo GlobalScope = Property(InternalState, "GlobalScope", Instance);
        /// <summary>The modules a session state has imported.</summary>
        public static readonly PropertyInfo ModuleTable = Property(InternalState, "ModuleTable", Instance);
        /// <summary>A module's script scope.</summary>
        public static readonly PropertyInfo ModuleScope = Property(InternalState, "ModuleScope", Instance);

        private static readonly Type Scope = GlobalScope?.PropertyType;
        /// <summary>A scope's variables.</summary>
        public static readonly PropertyInfo ScopeVariables = Property(Scope, "Variables", Instance);
        /// <summary>A scope's functions.</summary>
        public static readonly PropertyInfo ScopeFunctions = Property(Scope, "FunctionTable", Instance);
        /// <summary>A scope's aliases.</summary>
        public static readonly PropertyInfo ScopeAliases = Property(Scope, "AliasTable", Instance);
        /// <summary>A scope's drives.</summary>
        public static readonly PropertyInfo ScopeDrives = Property(Scope, "Drives", Instance);
        /// <summary>A scope's strict mode (Set-StrictMode).</summary>
        public static readonly PropertyInfo ScopeStrictMode = Property(Scope, "StrictModeVersion", Instance);

        private static readonly Type Context = ExecutionContext?.PropertyType;
        /// <summary>Argument completers a call registered (Register-ArgumentCompleter).</summary>
        public static readonly PropertyInfo CustomCompleters = Property(Context, "CustomArgumentCompleters", Instance);
        /// <summary>Native commands' argument completers.</summary>
        public static readonly PropertyInfo NativeCompleters = Property(Context, "NativeArgumentCompleters", Instance);
        /// <summary>Set-PSDebug's trace level.</summary>
        public static readonly PropertyInfo DebugTraceLevel = Property(Context, "PSDebugTraceLevel", Instance);
        /// <summary>Set-PSDebug's step mode.</summary>
        public static readonly PropertyInfo DebugTraceStep = Property(Context, "PSDebugTraceStep", Instance);
        /// <summary>The context's type table (Update-TypeData).</summary>
        public static readonly PropertyInfo TypeTable = Property(Context, "TypeTable", Instance);
        /// <summary>The type data entries of a type table.</summary>
        public static readonly FieldInfo TypeEntries = Field(TypeTable?.PropertyType, "typesInfo", Instance);
        /// <summary>How many entries <see cref="TypeEntries"/> holds.</summary>
        public static readonly PropertyInfo TypeEntryCount = Property(TypeEntries?.FieldType, "Count", Instance);
        /// <summary>The context's format data (Update-FormatData).</summary>
        public static readonly PropertyInfo FormatManager = Property(Context, "FormatDBManager", Instance);
        /// <summary>The format database a format manager holds now.</summary>
        public static readonly PropertyInfo FormatDatabase = Property(FormatManager?.PropertyType, "Database", Instance);

        // Explicit, so that the lookups run when the class is first used (host.ps1, at the start), not
        // at a moment the runtime picks.
        static EngineMembers()
        {
            ListVersion(typeof(List<object>));
        }

        /// <summary>The members this process lacks, each as Type.Member; empty when it has them all.</summary>
        public static string[] Missing
        {
            get { lock (Lost) return Lost.ToArray(); }
        }

        /// <summary>
        /// Why every reset retires this process: the members it lacks, and what svc does instead; null
        /// when it has them all.
        /// </summary>
        public static string RetireReason()
        {
            string[] missing = Missing;
            if (missing.Length == 0) return null;
            return "this PowerShell lacks the engine members " + string.Join(", ", missing) + " that a reset reads, so its process serves one call and is retired";
        }

        /// <summary>
        /// <paramref name="member"/> itself; throws <see cref="MissingMemberException"/> naming
        /// <paramref name="name"/> when this process lacks it (null).
        /// </summary>
        public static T Require<T>(T member, string name) where T : MemberInfo
        {
            if (member == null) throw new MissingMemberException("The engine has no member '" + name + "'.");
            return member;
        }

        /// <summary>
        /// List&lt;T&gt;'s change counter for <paramref name="listType"/> (a closed List type); null, and
        /// reported missing, when that type has none.
        /// </summary>
        public static FieldInfo ListVersion(Type listType)
        {
            FieldInfo field = listType.GetField(ListVersionName, BindingFlags.Instance | BindingFlags.NonPublic);
            if (field == null) Report("List." + ListVersionName);
            return field;
        }

        /// <summary>
        /// Records a member found missing after the process started (one a PowerShell class or a
        /// collection of a new item type needs): from then on every reset retires the process.
        /// </summary>
        public static void Report(string member)
        {
            lock (Lost)
            {
                if (!Lost.Contains(member)) Lost.Add(member);
            }
        }

        // A lookup on a type that is itself missing adds nothing: that type was reported already.
        private static PropertyInfo Property(Type type, string name, BindingFlags flags)
        {
            if (type == null) return null;
            PropertyInfo property = null;
            try { property = type.GetProperty(name, flags); } catch (AmbiguousMatchException) { /* more than one: not the member svc knows */ }
            if (property == null) Report(type.Name + "." + name);
            return property;
        }

        private static FieldInfo Field(Type type, string name, BindingFlags flags)
        {
            if (type == null) return null;
            FieldInfo field = type.GetField(name, flags);
            if (field == null) Report(type.Name + "." + name);
            return field;
        }

        private static Type EngineType(string fullName)
        {
            Type type = typeof(PSObject).Assembly.GetType(fullName, false);
            if (type == null) Report(fullName);
            return type;
        }
    }
}
