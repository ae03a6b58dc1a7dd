#Requires -Version 7.4
# svc worker: the PowerShell side of docs/worker-protocol.md. It runs requests in a separate runspace
# and reports raw facts; every policy decision (tool names, schemas, coercion, truncation, wording) is
# made in TypeScript. Frames travel over the socket named by -Endpoint, never over stdin/stdout, so
# nothing user code prints can corrupt them; stdout/stderr are diagnostics only.
[CmdletBinding()]
param([Parameter(Mandatory)][string]$Endpoint)

Set-StrictMode -Version 3.0
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# ---------------------------------------------------------------------------------------------------
# Scripts that run INSIDE the worker runspace. They are literals here only so the parser and ps-lint
# check them; they are sent as text (ToString) because a script block stays bound to the runspace that
# created it. Each runs in its own local scope, so its variables never reach the user's global scope,
# and each switches strict mode off for itself so a user's global Set-StrictMode cannot break it.
# ---------------------------------------------------------------------------------------------------

$SnapshotScript = {
    param($GlobalAliases)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    $PSDefaultParameterValues = @{}
    $variables = @{}
    foreach ($v in @(Microsoft.PowerShell.Utility\Get-Variable -Scope Global)) {
        # A collection's items (one level) are kept too: a call that changes a startup hashtable,
        # list or object in place leaves the variable pointing at the very same object.
        $value = $v.Value
        $contents = $null
        if ($value -is [System.Collections.IDictionary] -and -not $value.IsReadOnly) {
            $contents = [System.Collections.Generic.List[System.Collections.DictionaryEntry]]::new()
            foreach ($key in @($value.Keys)) { $contents.Add([System.Collections.DictionaryEntry]::new($key, $value[$key])) }
        } elseif ($value -is [System.Collections.IList] -and -not $value.IsReadOnly) {
            $contents = [object[]]::new($value.Count)
            $value.CopyTo($contents, 0)
        } elseif ($null -ne $value -and $value.PSObject.BaseObject -is [System.Management.Automation.PSCustomObject]) {
            $contents = [System.Collections.Generic.List[System.Collections.DictionaryEntry]]::new()
            foreach ($property in $value.PSObject.Properties) { $contents.Add([System.Collections.DictionaryEntry]::new($property.Name, $property.Value)) }
        }
        $variables[$v.Name] = @{ Value = $value; Options = $v.Options; Contents = $contents }
    }
    $functions = @{}
    foreach ($f in @(Microsoft.PowerShell.Management\Get-ChildItem -Path Function:)) { $functions[$f.Name] = @{ ScriptBlock = $f.ScriptBlock; Options = $f.Options } }
    $aliases = @{}
    foreach ($a in $GlobalAliases) { $aliases[$a.Name] = @{ Definition = $a.Definition; Options = $a.Options } }
    $drives = @{}
    foreach ($d in @(Microsoft.PowerShell.Management\Get-PSDrive)) { $drives[$d.Name] = @{ Root = $d.Root; Provider = $d.Provider.Name; Description = $d.Description } }
    # Get-Module runs last: the cmdlets above autoload Utility and Management, which must count as
    # part of the snapshot or every reset would unload them and every call would load them again.
    @{
        Variables       = $variables
        Functions       = $functions
        Aliases         = $aliases
        Drives          = $drives
        Location        = (Microsoft.PowerShell.Management\Get-Location).Path
        OutputRendering = $PSStyle.OutputRendering
        Jobs            = @(foreach ($job in @(Microsoft.PowerShell.Core\Get-Job)) { $job.InstanceId })
        Subscribers     = @(foreach ($subscriber in @(Microsoft.PowerShell.Utility\Get-EventSubscriber -Force)) { $subscriber.SubscriptionId })
        Breakpoints     = @(foreach ($breakpoint in @(Microsoft.PowerShell.Utility\Get-PSBreakpoint)) { $breakpoint.Id })
        Modules         = @(Microsoft.PowerShell.Core\Get-Module)
    }
}

$ResetScript = {
    param($Snapshot)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    # Local shadows, like the two lines above: a user's global WhatIf (Remove-* would only report), Confirm
    # (a prompt fails without a host UI) or default parameter values must not reach the cmdlets below.
    $WhatIfPreference = $false
    $ConfirmPreference = [System.Management.Automation.ConfirmImpact]::None
    $PSDefaultParameterValues = @{}

    # Every cmdlet is module-qualified: a call may have defined a function or alias of the same name.
    # Runspace-wide leftovers first: jobs, event subscriptions and breakpoints a call created, and
    # Set-PSDebug tracing (whose -Off also clears strict mode; the host restores that afterwards).
    foreach ($job in @(Microsoft.PowerShell.Core\Get-Job)) {
        if ($Snapshot.Jobs -notcontains $job.InstanceId) { Microsoft.PowerShell.Core\Remove-Job -Job $job -Force }
    }
    foreach ($subscriber in @(Microsoft.PowerShell.Utility\Get-EventSubscriber -Force)) {
        if ($Snapshot.Subscribers -notcontains $subscriber.SubscriptionId) { Microsoft.PowerShell.Utility\Unregister-Event -SubscriptionId $subscriber.SubscriptionId -Force }
    }
    foreach ($queued in @(Microsoft.PowerShell.Utility\Get-Event)) { Microsoft.PowerShell.Utility\Remove-Event -EventIdentifier $queued.EventIdentifier }
    foreach ($breakpoint in @(Microsoft.PowerShell.Utility\Get-PSBreakpoint)) {
        if ($Snapshot.Breakpoints -notcontains $breakpoint.Id) { Microsoft.PowerShell.Utility\Remove-PSBreakpoint -Breakpoint $breakpoint }
    }
    Microsoft.PowerShell.Core\Set-PSDebug -Off

    foreach ($module in @(Microsoft.PowerShell.Core\Get-Module)) {
        # Asked again each time: removing one module may already have taken another with it.
        if ($Snapshot.Modules -notcontains $module -and @(Microsoft.PowerShell.Core\Get-Module) -contains $module) { Microsoft.PowerShell.Core\Remove-Module -ModuleInfo $module -Force }
    }
    $loaded = @(Microsoft.PowerShell.Core\Get-Module)
    foreach ($module in $Snapshot.Modules) {
        if ($loaded -notcontains $module) { throw "Module '$($module.Name)' was removed and cannot be restored." }
    }

    # Removal searches the scope chain, so it reaches global functions from this scope; re-creating
    # one here would define it in this scope, so the host does that with top-level Set-Item calls.
    $functions = @{}
    foreach ($f in @(Microsoft.PowerShell.Management\Get-ChildItem -Path Function:)) { $functions[$f.Name] = $f }
    foreach ($name in @($functions.Keys)) {
        if (-not $Snapshot.Functions.ContainsKey($name)) { Microsoft.PowerShell.Management\Remove-Item -LiteralPath "Function:\$name" -Force }
    }
    $restore = [System.Collections.Generic.List[string]]::new()
    foreach ($entry in $Snapshot.Functions.GetEnumerator()) {
        $current = $functions[$entry.Key]
        if ($null -eq $current -or -not [object]::ReferenceEquals($current.ScriptBlock, $entry.Value.ScriptBlock)) { $restore.Add($entry.Key) }
    }

    $drives = @{}
    foreach ($d in @(Microsoft.PowerShell.Management\Get-PSDrive)) { $drives[$d.Name] = $d }
    foreach ($name in @($drives.Keys)) {
        $saved = $Snapshot.Drives[$name]
        $drive = $drives[$name]
        if ($null -eq $saved -or $saved.Root -cne $drive.Root -or $saved.Provider -cne $drive.Provider.Name) {
            Microsoft.PowerShell.Management\Remove-PSDrive -LiteralName $name -Scope Global -Force
            $drives.Remove($name)
        }
    }
    foreach ($entry in $Snapshot.Drives.GetEnumerator()) {
        if (-not $drives.ContainsKey($entry.Key)) {
            $null = Microsoft.PowerShell.Management\New-PSDrive -Name $entry.Key -PSProvider $entry.Value.Provider -Root $entry.Value.Root -Description $entry.Value.Description -Scope Global
        }
    }
    if ($ExecutionContext.SessionState.Path.CurrentLocation.Path -cne $Snapshot.Location) {
        Microsoft.PowerShell.Management\Set-Location -LiteralPath $Snapshot.Location
    }

    $same = {
        param($Left, $Right)
        # Value types are boxed anew and some engine strings are built on each read, so equal
        # values count as unchanged; anything else must be the very same object.
        if ([object]::ReferenceEquals($Left, $Right)) { return $true }
        if ($null -eq $Left -or $null -eq $Right) { return $false }
        if ($Left -is [string] -or $Left -is [System.ValueType]) { return $Left.Equals($Right) }
        return $false
    }
    # Puts back, in place, the items a collection or custom object held at the snapshot; writes only
    # when something differs, so an untouched startup object costs one comparison per item.
    $restoreContents = {
        param($Target, $Contents)
        if ($Target -is [System.Collections.IList]) {
            $changed = $Target.Count -ne $Contents.Count
            for ($i = 0; -not $changed -and $i -lt $Contents.Count; $i++) { $changed = -not (& $same $Target[$i] $Contents[$i]) }
            if (-not $changed) { return }
            if ($Target.IsFixedSize) {
                for ($i = 0; $i -lt $Contents.Count; $i++) { $Target[$i] = $Contents[$i] }
            } else {
                $Target.Clear()
                foreach ($item in $Contents) { $null = $Target.Add($item) }
            }
            return
        }
        if ($Target -is [System.Collections.IDictionary]) {
            $changed = $Target.Count -ne $Contents.Count
            foreach ($pair in $Contents) {
                if ($changed) { break }
                $changed = -not $Target.Contains($pair.Key) -or -not (& $same $Target[$pair.Key] $pair.Value)
            }
            if (-not $changed) { return }
            $Target.Clear()
            foreach ($pair in $Contents) { $Target[$pair.Key] = $pair.Value }
            return
        }
        $properties = $Target.PSObject.Properties
        $names = @(foreach ($pair in $Contents) { $pair.Key })
        foreach ($property in @($properties)) { if ($names -notcontains $property.Name) { $properties.Remove($property.Name) } }
        foreach ($pair in $Contents) {
            $property = $properties[$pair.Key]
            if ($null -eq $property) {
                $properties.Add([System.Management.Automation.PSNoteProperty]::new($pair.Key, $pair.Value))
            } elseif (-not (& $same $property.Value $pair.Value)) {
                $property.Value = $pair.Value
            }
        }
    }
    # Engine-managed names: per-pipeline automatics, constants, $Error (cleared below) and $PWD
    # (follows the location restored above).
    $automatic = @('$', '^', '?', '_', 'PSItem', 'args', 'input', 'this', 'foreach', 'switch', 'MyInvocation',
        'PSBoundParameters', 'PSCmdlet', 'PSCommandPath', 'PSScriptRoot', 'Error', 'PWD', 'ExecutionContext',
        'Host', 'null', 'true', 'false')
    $variables = @{}
    foreach ($v in @(Microsoft.PowerShell.Utility\Get-Variable -Scope Global)) { $variables[$v.Name] = $v }
    foreach ($name in @($variables.Keys)) {
        if ($automatic -notcontains $name -and -not $Snapshot.Variables.ContainsKey($name)) {
            # -Name takes wildcards; a new Constant variable fails here and fails the reset.
            Microsoft.PowerShell.Utility\Remove-Variable -Name ([System.Management.Automation.WildcardPattern]::Escape($name)) -Scope Global -Force
        }
    }
    foreach ($entry in $Snapshot.Variables.GetEnumerator()) {
        $saved = $entry.Value
        if ($automatic -contains $entry.Key) { continue }
        if ($saved.Options.HasFlag([System.Management.Automation.ScopedItemOptions]::ReadOnly) -or
            $saved.Options.HasFlag([System.Management.Automation.ScopedItemOptions]::Constant)) { continue }
        $current = $variables[$entry.Key]
        if ($null -eq $current) {
            Microsoft.PowerShell.Utility\New-Variable -Name $entry.Key -Value $saved.Value -Option $saved.Options -Scope Global
        } elseif (-not (& $same $current.Value $saved.Value)) {
            $current.Value = $saved.Value
        }
        if ($null -ne $saved.Contents) { & $restoreContents $saved.Value $saved.Contents }
    }

    # $PSStyle is one process-wide object shared by every runspace.
    if ($null -ne $Snapshot.OutputRendering) { $PSStyle.OutputRendering = $Snapshot.OutputRendering }
    $global:Error.Clear()
    @{ Restore = $restore.ToArray() }
}

$CommandsScript = {
    param($Names, $Modules, $Patterns)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    $found = [System.Collections.Generic.List[object]]::new()
    $missing = [System.Collections.Generic.List[string]]::new()

    # Helpers are script blocks in variables, not functions: a function defined here would shadow a
    # user command of the same name and show up in Get-Command's own answers.
    $addFound = {
        param($Command, [string]$Source, [string]$Via)
        $found.Add([ordered]@{
                name        = $Command.Name
                module      = if ($Command.ModuleName) { $Command.ModuleName } else { $null }
                commandType = [string]$Command.CommandType
                source      = $Source
                via         = $Via
            })
    }

    # -ErrorAction Ignore: an unknown name is an answer ("missing"), and Ignore keeps it out of $Error.
    foreach ($item in $Names) {
        $name = [string]$item
        $hits = @(Microsoft.PowerShell.Core\Get-Command -Name ([System.Management.Automation.WildcardPattern]::Escape($name)) -All -ErrorAction Ignore)
        if ($hits.Count -eq 0) { $missing.Add($name) }
        foreach ($command in $hits) { & $addFound $command 'name' $name }
    }
    # Each module entry arrives as @{ Name; Via }: the module name to ask for and the entry as configured.
    foreach ($item in $Modules) {
        $via = [string]$item.Via
        foreach ($command in @(Microsoft.PowerShell.Core\Get-Command -Module ([string]$item.Name) -CommandType @('Cmdlet', 'Function') -ErrorAction Ignore)) { & $addFound $command 'module' $via }
    }
    foreach ($item in $Patterns) {
        $pattern = [string]$item
        foreach ($command in @(Microsoft.PowerShell.Core\Get-Command -Name $pattern -CommandType @('Cmdlet', 'Function') -ErrorAction Ignore)) { & $addFound $command 'pattern' $pattern }
    }
    [ordered]@{ commands = $found; missing = $missing }
}

$DescribeScript = {
    param($Names, $WithHelp)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'

    # Helpers are script blocks in variables, not functions: a function defined here would shadow a
    # user command of the same name for Get-Command and Get-Help.
    $typeName = {
        param($Type)
        if ($null -eq $Type) { return $null }
        if ($Type.FullName) { return $Type.FullName }
        return $Type.ToString()
    }

    $bound = {
        param($Value)
        if ($null -eq $Value) { return $null }
        foreach ($numeric in @([byte], [sbyte], [int16], [uint16], [int], [uint32], [long], [uint64], [single], [double], [decimal])) {
            if ($Value -is $numeric) { return $Value }
        }
        return [string]$Value
    }

    # Help text arrives as an array of paragraph objects with a Text property (or plain strings).
    $joinText = {
        param($Value)
        $parts = [System.Collections.Generic.List[string]]::new()
        foreach ($item in @($Value)) {
            if ($null -eq $item) { continue }
            $text = if ($item -is [string]) { $item } else { [string]$item.Text }
            if ($text.Trim()) { $parts.Add($text.Trim()) }
        }
        if ($parts.Count -eq 0) { return $null }
        return $parts -join "`n`n"
    }

    $paramMeta = {
        param($Parameter)
        $type = $Parameter.ParameterType
        $element = if ($type.IsArray) { $type.GetElementType() } else { $null }
        $valueType = if ($null -ne $element) { $element } else { $type }
        $underlying = [System.Nullable]::GetUnderlyingType($valueType)
        if ($null -ne $underlying) { $valueType = $underlying }
        $meta = [ordered]@{
            name                        = $Parameter.Name
            type                        = & $typeName $type
            elementType                 = & $typeName $element
            isMandatory                 = $Parameter.IsMandatory
            position                    = if ($Parameter.Position -eq [int]::MinValue) { $null } else { $Parameter.Position }
            valueFromPipeline           = $Parameter.ValueFromPipeline
            valueFromRemainingArguments = $Parameter.ValueFromRemainingArguments
            helpMessage                 = if ($Parameter.HelpMessage) { $Parameter.HelpMessage } else { $null }
            aliases                     = @($Parameter.Aliases)
            isSwitch                    = $type -eq [System.Management.Automation.SwitchParameter]
            isCredential                = $type -eq [System.Management.Automation.PSCredential]
            enumValues                  = if ($valueType.IsEnum) { [string[]][System.Enum]::GetNames($valueType) } else { $null }
            validateSet                 = $null
            validateRange               = $null
            validateLength              = $null
            validatePattern             = $null
            validateCount               = $null
            validateNotNullOrEmpty      = $false
            isDynamic                   = $Parameter.IsDynamic
        }
        foreach ($attribute in $Parameter.Attributes) {
            # One unreadable attribute (e.g. a throwing ValidValues generator) must not hide the command.
            try {
                if ($attribute -is [System.Management.Automation.ValidateSetAttribute]) {
                    if ($null -eq $meta['validateSet']) { $meta['validateSet'] = [string[]]@($attribute.ValidValues) }
                } elseif ($attribute -is [System.Management.Automation.ValidateRangeAttribute]) {
                    $min = $attribute.MinRange
                    $max = $attribute.MaxRange
                    if ($null -eq $min -and $null -eq $max) {
                        # [ValidateRange('Positive')] etc. keep the kind in an internal property only.
                        $property = $attribute.GetType().GetProperty('RangeKind', [System.Reflection.BindingFlags]'NonPublic, Instance')
                        $kind = if ($null -ne $property) { [string]$property.GetValue($attribute) } else { '' }
                        if ($kind -in @('Positive', 'NonNegative')) { $min = 0 }
                        if ($kind -in @('Negative', 'NonPositive')) { $max = 0 }
                    }
                    $meta['validateRange'] = [ordered]@{ min = & $bound $min; max = & $bound $max }
                } elseif ($attribute -is [System.Management.Automation.ValidateLengthAttribute]) {
                    $meta['validateLength'] = [ordered]@{ min = $attribute.MinLength; max = $attribute.MaxLength }
                } elseif ($attribute -is [System.Management.Automation.ValidatePatternAttribute]) {
                    $meta['validatePattern'] = $attribute.RegexPattern
                } elseif ($attribute -is [System.Management.Automation.ValidateCountAttribute]) {
                    $meta['validateCount'] = [ordered]@{ min = $attribute.MinLength; max = $attribute.MaxLength }
                } elseif ($attribute -is [System.Management.Automation.ValidateNotNullOrEmptyAttribute] -or
                    $attribute.GetType().FullName -eq 'System.Management.Automation.ValidateNotNullOrWhiteSpaceAttribute') {
                    $meta['validateNotNullOrEmpty'] = $true
                }
            } catch {
                [Console]::Error.WriteLine("host.ps1: skipped an attribute of parameter '$($Parameter.Name)': $($_.Exception.Message)")
            }
        }
        $meta
    }

    $helpMeta = {
        param($Command)
        $help = @(Microsoft.PowerShell.Core\Get-Help -Name $Command.Name -ErrorAction Stop)[0]
        if ($null -eq $help) { return $null }
        # Without a help file Get-Help invents a synopsis from the syntax; that is not help text.
        if ($help.PSObject.TypeNames -contains 'ExtendedCmdletHelpInfo') {
            return [ordered]@{ synopsis = $null; description = $null; parameters = [ordered]@{} }
        }
        $parameters = [ordered]@{}
        foreach ($p in @($help.parameters.parameter)) {
            if ($null -eq $p) { continue }
            $text = & $joinText $p.description
            if ($text) { $parameters[[string]$p.name] = $text }
        }
        $synopsis = ([string]$help.Synopsis).Trim()
        return [ordered]@{
            synopsis    = if ($synopsis) { $synopsis } else { $null }
            description = & $joinText $help.description
            parameters  = $parameters
        }
    }

    $commands = [System.Collections.Generic.List[object]]::new()
    $missing = [System.Collections.Generic.List[string]]::new()
    foreach ($item in $Names) {
        $name = [string]$item
        try {
            $command = @(Microsoft.PowerShell.Core\Get-Command -Name ([System.Management.Automation.WildcardPattern]::Escape($name)) -ErrorAction Ignore)[0]
            if ($command -is [System.Management.Automation.AliasInfo]) { $command = $command.ResolvedCommand }
            if ($null -eq $command) { $missing.Add($name); continue }
            $metadata = $null
            try { $metadata = [System.Management.Automation.CommandMetadata]::new($command) } catch { $metadata = $null }
            $sets = [System.Collections.Generic.List[object]]::new()
            $default = $null
            foreach ($set in $command.ParameterSets) {
                # Only a named set can be flagged default; a lone __AllParameterSets never is.
                if ($set.IsDefault) { $default = $set.Name }
                $sets.Add([ordered]@{
                        name       = $set.Name
                        isDefault  = $set.IsDefault
                        syntax     = $set.ToString()
                        parameters = @(foreach ($p in $set.Parameters) { & $paramMeta $p })
                    })
            }
            $help = $null
            if ($WithHelp) {
                try { $help = & $helpMeta $command } catch { $help = $null }
            }
            $commands.Add([ordered]@{
                    name                  = $command.Name
                    commandType           = [string]$command.CommandType
                    module                = if ($command.ModuleName) { $command.ModuleName } else { $null }
                    moduleVersion         = if ($null -ne $command.Module) { [string]$command.Module.Version } else { $null }
                    verb                  = if ($command.Verb) { $command.Verb } else { $null }
                    noun                  = if ($command.Noun) { $command.Noun } else { $null }
                    defaultParameterSet   = $default
                    supportsShouldProcess = $null -ne $metadata -and $metadata.SupportsShouldProcess
                    outputTypes           = @(foreach ($type in $command.OutputType) { $type.Name })
                    parameterSets         = $sets
                    help                  = $help
                })
        } catch {
            [Console]::Error.WriteLine("host.ps1: cannot describe '$name': $($_.Exception.Message)")
            $missing.Add($name)
        }
    }
    [ordered]@{ commands = $commands; missing = $missing }
}

# ---------------------------------------------------------------------------------------------------
# Host state and helpers (host runspace only).
# ---------------------------------------------------------------------------------------------------

$script:Worker = $null
$script:Reader = $null
$script:Writer = $null
$script:Running = $null
$script:Snapshot = $null
$script:EnvSnapshot = $null
$script:StrictMode = $null
# Host script block -> the same script compiled once in the worker runspace.
$script:CompiledScripts = [System.Collections.Generic.Dictionary[scriptblock, scriptblock]]::new()
$script:WorkerSessionState = $null
$script:EngineTables = $null
$script:CleanFingerprint = $null
$script:FastResetBroken = $false
$script:GlobalScope = $null
$script:StrictModeProperty = $null
# Module entry as given to startup (a name or a path) -> name of the module imported from it.
$script:ModuleNames = [System.Collections.Generic.Dictionary[string, string]]::new([System.StringComparer]::Ordinal)
$script:Quit = $false

function Write-Diag([string]$Message) {
    [Console]::Error.WriteLine("host.ps1: $Message")
}

# Exactly one layer: a .NET call made from script wraps what it throws in MethodInvocationException.
function Get-InnerException([System.Exception]$Exception) {
    if ($Exception -is [System.Management.Automation.MethodInvocationException] -and $null -ne $Exception.InnerException) {
        return $Exception.InnerException
    }
    return $Exception
}

function Get-ErrorRecord([System.Exception]$Exception) {
    if ($Exception -is [System.Management.Automation.IContainsErrorRecord]) {
        $record = $null
        try { $record = $Exception.ErrorRecord } catch { $record = $null }
        if ($null -ne $record) { return $record }
    }
    return [System.Management.Automation.ErrorRecord]::new($Exception, $Exception.GetType().Name,
        [System.Management.Automation.ErrorCategory]::NotSpecified, $null)
}

function Get-NonEmpty([string]$Text) {
    if ([string]::IsNullOrEmpty($Text)) { return $null }
    return $Text
}

# The runspace has no host UI, so a prompt fails at once with a HostException. Its text names the
# prompt only for confirmations: Read-Host's prompt is not in it at all. The statement that prompted
# is, so the message quotes it, says why it failed, and what to do instead.
function Get-ErrorMessage([System.Management.Automation.ErrorRecord]$Record) {
    $message = $Record.ToString()
    $exception = $Record.Exception
    while ($null -ne $exception -and $exception -isnot [System.Management.Automation.Host.HostException]) {
        $exception = $exception.InnerException
    }
    if ($null -eq $exception) { return $message }
    $invocation = $Record.InvocationInfo
    $command = if ($null -ne $invocation -and $null -ne $invocation.MyCommand) { $invocation.MyCommand.Name } else { '' }
    if (-not $command) { $command = 'The command' }
    $statement = if ($null -ne $invocation) { ([string]$invocation.Line).Trim() } else { '' }
    $asked = if ($statement) { " (at: $statement)" } else { '' }
    return "$command asked for user input$asked, but svc runs commands non-interactively: give the value as a parameter, or -Confirm:`$false for a confirmation. $message"
}

function ConvertTo-ErrorInfo([System.Management.Automation.ErrorRecord]$Record, [bool]$Terminating) {
    $invocation = $Record.InvocationInfo
    $position = $null
    if ($null -ne $invocation -and $invocation.ScriptLineNumber -gt 0) {
        $position = [ordered]@{
            scriptName = Get-NonEmpty $invocation.ScriptName
            line       = $invocation.ScriptLineNumber
            column     = $invocation.OffsetInLine
            text       = Get-NonEmpty $invocation.Line
        }
    }
    $category = $Record.CategoryInfo
    [ordered]@{
        message               = Get-ErrorMessage $Record
        fullyQualifiedErrorId = Get-NonEmpty $Record.FullyQualifiedErrorId
        category              = [string]$category.Category
        targetName            = Get-NonEmpty $category.TargetName
        targetType            = Get-NonEmpty $category.TargetType
        exceptionType         = if ($null -ne $Record.Exception) { $Record.Exception.GetType().FullName } else { $null }
        scriptStackTrace      = Get-NonEmpty $Record.ScriptStackTrace
        terminating           = $Terminating
        position              = $position
    }
}

# JSON null or absent -> empty array; a scalar -> one item. The comma stops the caller unrolling it.
function ConvertTo-List($Value) {
    if ($null -eq $Value) { return , ([object[]]@()) }
    return , ([object[]]@($Value))
}

# Requests are parsed with System.Text.Json rather than ConvertFrom-Json: in 7.4 ConvertFrom-Json turns
# every ISO-8601-looking string into a DateTime and cannot be told not to, which would change the
# arguments a user passes. Objects become case-insensitive [hashtable]s, arrays object[].
function ConvertFrom-JsonElement($Element) {
    switch ([string]$Element.ValueKind) {
        'Object' {
            $table = @{}
            foreach ($property in $Element.EnumerateObject()) { $table[$property.Name] = ConvertFrom-JsonElement $property.Value }
            return $table
        }
        'Array' {
            $items = [System.Collections.Generic.List[object]]::new()
            foreach ($item in $Element.EnumerateArray()) { $items.Add((ConvertFrom-JsonElement $item)) }
            return , $items.ToArray()
        }
        'String' { return $Element.GetString() }
        'Number' {
            [long]$number = 0
            if ($Element.TryGetInt64([ref]$number)) {
                if ($number -ge [int]::MinValue -and $number -le [int]::MaxValue) { return [int]$number }
                return $number
            }
            return $Element.GetDouble()
        }
        'True' { return $true }
        'False' { return $false }
    }
    return $null
}

function ConvertFrom-FrameJson([string]$Line) {
    $document = [System.Text.Json.JsonDocument]::Parse($Line)
    try { return ConvertFrom-JsonElement $document.RootElement } finally { $document.Dispose() }
}

function Send-Frame([string]$Json) {
    $script:Writer.WriteLine($Json)
}

function Send-Response($Id, $Result) {
    Send-Frame (ConvertTo-Json -InputObject ([ordered]@{ id = $Id; ok = $true; result = $Result }) -Depth 100 -Compress)
}

function Send-Failure($Id, [string]$Kind, [string]$Message, $Record) {
    $failure = [ordered]@{ kind = $Kind; message = $Message; record = $Record }
    Send-Frame (ConvertTo-Json -InputObject ([ordered]@{ id = $Id; ok = $false; error = $failure }) -Depth 100 -Compress)
}

function New-WorkerRunspace {
    # CreateDefault2 is what the console host uses: only Core is loaded, the rest autoloads, so built-in
    # commands report the same Module/Version as in an interactive pwsh. No host is passed: the runspace
    # gets DefaultHost, whose prompts (Read-Host, Get-Credential, confirmations) fail at once.
    $iss = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()
    $runspace = [System.Management.Automation.Runspaces.RunspaceFactory]::CreateRunspace($iss)
    $runspace.Open()
    # Verbose and debug records are kept only under Continue (nothing is printed without a host UI);
    # TypeScript decides what to show. Progress records are never reported, so do not store them.
    $runspace.SessionStateProxy.SetVariable('VerbosePreference', [System.Management.Automation.ActionPreference]::Continue)
    $runspace.SessionStateProxy.SetVariable('DebugPreference', [System.Management.Automation.ActionPreference]::Continue)
    $runspace.SessionStateProxy.SetVariable('ProgressPreference', [System.Management.Automation.ActionPreference]::SilentlyContinue)
    return $runspace
}

# Runs one of the scripts above in the worker runspace (useLocalScope: its variables stay out of the
# global scope) and returns the object it ends with.
function Invoke-WorkerScript([scriptblock]$Script, [object[]]$ArgumentList) {
    # Script text given to AddScript is parsed and compiled again on every run (15 ms for the reset
    # script on pwsh 7.6); a script block made once in the worker runspace is compiled once.
    $compiled = $script:CompiledScripts[$Script]
    if ($null -eq $compiled) {
        $ps = [powershell]::Create($script:Worker)
        try {
            $null = $ps.AddScript('param($Text) [scriptblock]::Create($Text)', $true).AddArgument($Script.ToString())
            $compiled = $ps.Invoke()[0].PSObject.BaseObject
        } finally {
            $ps.Dispose()
        }
        $script:CompiledScripts[$Script] = $compiled
    }
    $ps = [powershell]::Create($script:Worker)
    try {
        # The call operator runs the block in a new local scope, so its variables stay out of the
        # user's global scope; the splatted array passes each argument positionally.
        $null = $ps.AddScript('param($Script, $Arguments) & $Script @Arguments', $true).AddArgument($compiled).AddArgument($ArgumentList)
        $output = $ps.Invoke()
    } finally {
        $ps.Dispose()
    }
    if ($output.Count -eq 0 -or $null -eq $output[$output.Count - 1]) { throw 'A worker script returned no result.' }
    return $output[$output.Count - 1].PSObject.BaseObject
}

# Aliases as the global scope sees them. A top-level command runs in the global scope, where a
# Private alias is visible; the worker scripts run in a local scope, where it is not.
function Get-GlobalAlias {
    $ps = [powershell]::Create($script:Worker)
    try {
        $null = $ps.AddCommand('Microsoft.PowerShell.Management\Get-ChildItem').AddParameter('Path', 'Alias:')
        return , ([object[]]@(foreach ($alias in $ps.Invoke()) { $alias.PSObject.BaseObject }))
    } finally {
        $ps.Dispose()
    }
}

# The strict mode of the worker's global scope (Set-StrictMode in a call) has no public getter or
# setter outside that scope, so it is read and written through the engine's own (internal) members.
# A build without them keeps working: strict mode is then not restored, and the log says so once.
function Get-GlobalScope {
    if ($null -eq $script:GlobalScope) {
        $flags = [System.Reflection.BindingFlags]'NonPublic, Instance'
        $state = $script:WorkerSessionState
        $internal = [System.Management.Automation.SessionState].GetProperty('Internal', $flags).GetValue($state)
        $scope = $internal.GetType().GetProperty('GlobalScope', $flags).GetValue($internal)
        $script:StrictModeProperty = $scope.GetType().GetProperty('StrictModeVersion', $flags)
        $script:GlobalScope = $scope
    }
    return $script:GlobalScope
}

# ---------------------------------------------------------------------------------------------------
# The reset's fast path. Most calls change nothing a reset restores, so before running the reset
# script the host compares a fingerprint of that state, read straight from the engine's tables (no
# cmdlets, no providers, about a millisecond), with the one taken when the state was last clean. Any
# difference, or any table it cannot read, sends the reset down the full path. The tables are
# internal members, read only while the worker is idle; a build without them always takes the full
# path.
# ---------------------------------------------------------------------------------------------------

# Names the reset script leaves alone (engine-managed, or handled on their own like $Error).
$script:AutomaticVariables = [System.Collections.Generic.HashSet[string]]::new([string[]]@('$', '^', '?', '_',
        'PSItem', 'args', 'input', 'this', 'foreach', 'switch', 'MyInvocation', 'PSBoundParameters', 'PSCmdlet',
        'PSCommandPath', 'PSScriptRoot', 'Error', 'PWD', 'ExecutionContext', 'Host', 'null', 'true', 'false'),
    [System.StringComparer]::OrdinalIgnoreCase)

# The engine's tables the fingerprint reads, found once (reflection on internal members).
function Get-EngineTables {
    if ($null -eq $script:EngineTables) {
        $flags = [System.Reflection.BindingFlags]'NonPublic, Public, Instance'
        $member = {
            param($Target, [string]$Name)
            $property = $Target.GetType().GetProperty($Name, $flags)
            if ($null -eq $property) { throw "The engine has no member '$Name' on $($Target.GetType().Name)." }
            return , $property
        }
        $scope = Get-GlobalScope
        $internal = (& $member $script:WorkerSessionState 'Internal').GetValue($script:WorkerSessionState)
        $context = (& $member $internal 'ExecutionContext').GetValue($internal)
        $script:EngineTables = @{
            Scope       = $scope
            Context     = $context
            Variables   = (& $member $scope 'Variables').GetValue($scope)
            Functions   = (& $member $scope 'FunctionTable').GetValue($scope)
            Aliases     = & $member $scope 'AliasTable'
            Drives      = & $member $scope 'Drives'
            Modules     = (& $member $internal 'ModuleTable').GetValue($internal)
            TraceLevel  = & $member $context 'PSDebugTraceLevel'
            TraceStep   = & $member $context 'PSDebugTraceStep'
            Jobs        = (& $member $script:Worker 'JobRepository').GetValue($script:Worker)
        }
    }
    return $script:EngineTables
}

# What a reset restores, as plain values and object references; one pass over each table. Items
# of collections held by variables are kept one level deep, as the snapshot script keeps them.
function Get-StateFingerprint {
    $t = Get-EngineTables
    $variables = [System.Collections.Generic.List[object]]::new()
    foreach ($variable in $t.Variables.Values) {
        if ($script:AutomaticVariables.Contains($variable.Name)) { continue }
        $value = $variable.Value
        $variables.Add($variable)
        $variables.Add($value)
        $variables.Add($variable.Options)
        if ($value -is [System.Collections.IDictionary]) {
            $variables.Add($value.Count)
            foreach ($entry in $value.GetEnumerator()) { $variables.Add($entry.Key); $variables.Add($entry.Value) }
        } elseif ($value -is [System.Collections.IList]) {
            $variables.Add($value.Count)
            foreach ($item in $value) { $variables.Add($item) }
        } elseif ($null -ne $value -and $value.PSObject.BaseObject -is [System.Management.Automation.PSCustomObject]) {
            foreach ($property in $value.PSObject.Properties) { $variables.Add($property.Name); $variables.Add($property.Value) }
        }
    }
    foreach ($function in $t.Functions.Values) { $variables.Add($function); $variables.Add($function.ScriptBlock); $variables.Add($function.Options) }
    foreach ($alias in $t.Aliases.GetValue($t.Scope)) { $variables.Add($alias.Name); $variables.Add($alias.Definition); $variables.Add($alias.Options) }
    foreach ($drive in $t.Drives.GetValue($t.Scope)) { $variables.Add($drive) }
    foreach ($module in $t.Modules.Values) { $variables.Add($module) }
    $variables.Add($script:WorkerSessionState.Path.CurrentLocation.Path)
    $variables.Add($script:StrictModeProperty.GetValue($t.Scope))
    $variables.Add($t.TraceLevel.GetValue($t.Context))
    $variables.Add($t.TraceStep.GetValue($t.Context))
    $variables.Add($t.Jobs.Jobs.Count)
    $variables.Add(@($script:Worker.Events.Subscribers).Count)
    $variables.Add($script:Worker.Events.ReceivedEvents.Count)
    $variables.Add($script:Worker.Debugger.GetBreakpoints().Count)
    $variables.Add($PSStyle.OutputRendering)
    return , $variables
}

# True when nothing a reset restores differs from the clean fingerprint: the same objects, or equal
# strings and value types (which are boxed anew on each read).
function Test-StateUnchanged([System.Collections.Generic.List[object]]$Clean) {
    $now = Get-StateFingerprint
    if ($now.Count -ne $Clean.Count) { return $false }
    for ($i = 0; $i -lt $now.Count; $i++) {
        $left = $now[$i]
        $right = $Clean[$i]
        if ([object]::ReferenceEquals($left, $right)) { continue }
        if ($null -eq $left -or $null -eq $right) { return $false }
        if (($left -is [string] -or $left -is [System.ValueType]) -and $left.Equals($right)) { continue }
        return $false
    }
    return $true
}

# The fingerprint of the clean state, or null when the engine's tables cannot be read (every reset
# then takes the full path; said once).
function Save-CleanFingerprint {
    if ($script:FastResetBroken) { return }
    try {
        $script:CleanFingerprint = Get-StateFingerprint
    } catch {
        $script:FastResetBroken = $true
        $script:CleanFingerprint = $null
        Write-Diag "every reset takes the full path: $((Get-InnerException $_.Exception).Message)"
    }
}

function Get-GlobalStrictMode {
    try {
        $scope = Get-GlobalScope
        return @{ Known = $true; Version = $script:StrictModeProperty.GetValue($scope) }
    } catch {
        Write-Diag "cannot read the global strict mode, so resets will not restore it: $((Get-InnerException $_.Exception).Message)"
        return @{ Known = $false; Version = $null }
    }
}

function Restore-GlobalStrictMode($Saved) {
    if (-not $Saved['Known']) { return }
    $scope = Get-GlobalScope
    if ($script:StrictModeProperty.GetValue($scope) -ne $Saved['Version']) { $script:StrictModeProperty.SetValue($scope, $Saved['Version']) }
}

# Puts back the global functions the reset script names and the global aliases as the snapshot had
# them. These run as top-level commands, so they act in the global scope: a function defined from
# the reset script's scope would land in that scope, and a Private alias is invisible from it.
# Module-qualified names, so a call's look-alike function or alias cannot stand in for them.
function Restore-GlobalItem([string[]]$FunctionNames) {
    $ps = [powershell]::Create($script:Worker)
    try {
        $count = 0
        foreach ($name in $FunctionNames) {
            $saved = $script:Snapshot['Functions'][$name]
            $null = $ps.AddCommand('Microsoft.PowerShell.Management\Set-Item').AddParameter('LiteralPath', "Function:\$name").AddParameter('Value', $saved['ScriptBlock']).AddParameter('Options', $saved['Options']).AddParameter('Force').AddParameter('ErrorAction', 'Stop')
            $null = $ps.AddStatement()
            $count++
        }
        $saved = $script:Snapshot['Aliases']
        $current = @{}
        foreach ($alias in (Get-GlobalAlias)) { $current[$alias.Name] = $alias }
        foreach ($name in @($current.Keys)) {
            if (-not $saved.ContainsKey($name)) {
                $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Remove-Alias').AddParameter('Name', $name).AddParameter('Scope', 'Global').AddParameter('Force').AddParameter('ErrorAction', 'Stop')
                $null = $ps.AddStatement()
                $count++
            }
        }
        foreach ($entry in $saved.GetEnumerator()) {
            $alias = $current[$entry.Key]
            if ($null -eq $alias -or $alias.Definition -cne $entry.Value['Definition'] -or $alias.Options -ne $entry.Value['Options']) {
                $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Set-Alias').AddParameter('Name', $entry.Key).AddParameter('Value', $entry.Value['Definition']).AddParameter('Option', $entry.Value['Options']).AddParameter('Scope', 'Global').AddParameter('Force').AddParameter('ErrorAction', 'Stop')
                $null = $ps.AddStatement()
                $count++
            }
        }
        if ($count -eq 0) { return }
        $null = $ps.Invoke()
        # AddStatement makes this a batch, and a batch rethrows only -ErrorAction Stop failures: any
        # other terminating error of a statement (binding, provider) is added to the error stream
        # and the batch goes on (PowerShell.CoreInvoke), so a failed restore shows only there.
        if ($ps.Streams.Error.Count -gt 0) { throw $ps.Streams.Error[0] }
    } finally {
        $ps.Dispose()
    }
}

function Get-EnvSnapshot {
    $comparer = if ($IsWindows) { [System.StringComparer]::OrdinalIgnoreCase } else { [System.StringComparer]::Ordinal }
    $table = [System.Collections.Generic.Dictionary[string, string]]::new($comparer)
    foreach ($entry in [System.Environment]::GetEnvironmentVariables().GetEnumerator()) {
        # Windows keeps per-drive directories as '=C:' entries, which cannot be set by name.
        if (-not ([string]$entry.Key).StartsWith('=')) { $table[[string]$entry.Key] = [string]$entry.Value }
    }
    return , $table
}

function Restore-Environment {
    $saved = $script:EnvSnapshot
    $now = Get-EnvSnapshot
    foreach ($name in @($now.Keys)) {
        # [NullString]::Value, not $null: PowerShell passes $null to a string parameter as "", which
        # leaves the variable set (to an empty value) instead of removing it.
        if (-not $saved.ContainsKey($name)) { [System.Environment]::SetEnvironmentVariable($name, [NullString]::Value) }
    }
    foreach ($name in @($saved.Keys)) {
        if (-not $now.ContainsKey($name) -or $now[$name] -cne $saved[$name]) {
            [System.Environment]::SetEnvironmentVariable($name, $saved[$name])
        }
    }
}

# ---------------------------------------------------------------------------------------------------
# Operations.
# ---------------------------------------------------------------------------------------------------

function Import-WorkerModule([string]$Name) {
    $entry = [ordered]@{ name = $Name; found = $false; version = $null; path = $null; error = $null }
    $ps = [powershell]::Create($script:Worker)
    try {
        # Module-qualified so a user function or alias of the same name cannot intercept the call.
        $null = $ps.AddCommand('Microsoft.PowerShell.Core\Import-Module').AddParameter('Name', $Name).AddParameter('Global').AddParameter('PassThru').AddParameter('ErrorAction', 'Stop')
        $loaded = $ps.Invoke()
        $entry['found'] = $true
        if ($loaded.Count -gt 0) {
            $module = $loaded[0].PSObject.BaseObject
            $script:ModuleNames[$Name] = $module.Name
            $entry['version'] = [string]$module.Version
            $entry['path'] = Get-NonEmpty $module.Path
        }
    } catch {
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        $entry['error'] = $record.ToString()
        $errorId = ([string]$record.FullyQualifiedErrorId -split ',')[0]
        $entry['found'] = @('Modules_ModuleNotFound', 'Modules_ModuleWithVersionNotFound') -notcontains $errorId
    } finally {
        $ps.Dispose()
    }
    return $entry
}

function Invoke-Startup($Id, [hashtable]$Params) {
    $watch = [System.Diagnostics.Stopwatch]::StartNew()
    $modules = [System.Collections.Generic.List[object]]::new()
    foreach ($name in (ConvertTo-List $Params['modules'])) { $modules.Add((Import-WorkerModule ([string]$name))) }

    # Stop turns every error (throw, -ErrorAction Stop, a failing .NET call) into one that ends the
    # invocation; it is set and restored in the worker's global scope, where the scripts run.
    $proxy = $script:Worker.SessionStateProxy
    $savedPreference = $proxy.GetVariable('ErrorActionPreference')
    $proxy.SetVariable('ErrorActionPreference', [System.Management.Automation.ActionPreference]::Stop)
    $failure = $null
    try {
        $path = $Params['scriptPath']
        if ($path -is [string] -and $path.Length -gt 0) {
            $ps = [powershell]::Create($script:Worker)
            # useLocalScope $false dot-sources the file: its definitions stay global, and
            # $PSScriptRoot and error positions still refer to the file.
            try { $null = $ps.AddCommand($path, $false); $null = $ps.Invoke() } finally { $ps.Dispose() }
        }
        $text = $Params['script']
        if ($text -is [string] -and $text.Length -gt 0) {
            $ps = [powershell]::Create($script:Worker)
            try { $null = $ps.AddScript($text); $null = $ps.Invoke() } finally { $ps.Dispose() }
        }
    } catch {
        $failure = Get-ErrorRecord (Get-InnerException $_.Exception)
    } finally {
        $proxy.SetVariable('ErrorActionPreference', $savedPreference)
    }
    if ($null -ne $failure) {
        Send-Failure $Id 'startup' $failure.ToString() (ConvertTo-ErrorInfo $failure $true)
        return
    }

    $script:WorkerSessionState = Invoke-WorkerScript { $ExecutionContext.SessionState } @()
    $script:Snapshot = Invoke-WorkerScript $SnapshotScript @(, (Get-GlobalAlias))
    $script:StrictMode = Get-GlobalStrictMode
    $script:EnvSnapshot = Get-EnvSnapshot
    Save-CleanFingerprint
    Send-Response $Id ([ordered]@{ modules = $modules; durationMs = $watch.ElapsedMilliseconds })
}

function Invoke-Reset($Id) {
    $watch = [System.Diagnostics.Stopwatch]::StartNew()
    # Where the time goes, per step, for the profile in bench/ (ms, cumulative).
    $spans = [ordered]@{}
    $path = 'full'
    try {
        if ($null -eq $script:Snapshot) { throw 'There is no snapshot to return to: startup has not run.' }
        $unchanged = $false
        if ($null -ne $script:CleanFingerprint) {
            try { $unchanged = Test-StateUnchanged $script:CleanFingerprint } catch { $unchanged = $false }
        }
        $spans['check'] = $watch.Elapsed.TotalMilliseconds
        if ($unchanged) {
            $path = 'fast'
            $errors = $script:WorkerSessionState.PSVariable.GetValue('Error')
            if ($errors -is [System.Collections.IList] -and $errors.Count -gt 0) { $errors.Clear() }
        } else {
            $result = Invoke-WorkerScript $ResetScript @(, $script:Snapshot)
            $spans['script'] = $watch.Elapsed.TotalMilliseconds
            Restore-GlobalItem @($result['Restore'])
            $spans['functionsAndAliases'] = $watch.Elapsed.TotalMilliseconds
            Restore-GlobalStrictMode $script:StrictMode
            Save-CleanFingerprint
            $spans['fingerprint'] = $watch.Elapsed.TotalMilliseconds
        }
        Restore-Environment
        $spans['environment'] = $watch.Elapsed.TotalMilliseconds
    } catch {
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        Send-Failure $Id 'reset' $record.ToString() (ConvertTo-ErrorInfo $record $true)
        return
    }
    Send-Response $Id ([ordered]@{ durationMs = $watch.ElapsedMilliseconds; path = $path; spans = $spans })
}

function New-Credential($Value) {
    if ($Value -isnot [System.Collections.IDictionary]) { throw 'A credential must be an object with UserName and Password.' }
    # NetworkCredential accepts an empty password, which ConvertTo-SecureString -String rejects.
    $secure = [System.Net.NetworkCredential]::new('', [string]$Value['Password']).SecurePassword
    return [System.Management.Automation.PSCredential]::new([string]$Value['UserName'], $secure)
}

function Start-Invoke($Id, [hashtable]$Params) {
    $command = $Params['command']
    if ($command -isnot [string] -or $command.Length -eq 0) { throw 'The invoke request names no command.' }
    $depth = 4
    if ($null -ne $Params['depth']) { $depth = [int]$Params['depth'] }
    if ($depth -lt 0 -or $depth -gt 100) { throw "Depth $depth is outside 0..100, the range ConvertTo-Json accepts." }
    $parameters = $Params['parameters']
    if ($null -ne $parameters -and $parameters -isnot [hashtable]) { throw 'The invoke parameters are not an object.' }
    $credentials = ConvertTo-List $Params['credentials']

    $ps = [powershell]::Create($script:Worker)
    try {
        $null = $ps.AddCommand($command)
        if ($null -ne $parameters) {
            foreach ($name in @($parameters.Keys)) {
                $value = $parameters[$name]
                if ($null -ne $value -and $credentials -contains $name) { $value = New-Credential $value }
                $null = $ps.AddParameter([string]$name, $value)
            }
        }
        # A completed, empty input collection: the command gets no pipeline input. The output
        # collection is ours, so objects written before a Stop or a terminating error survive.
        $pipelineInput = [System.Management.Automation.PSDataCollection[psobject]]::new()
        $pipelineInput.Complete()
        $output = [System.Management.Automation.PSDataCollection[psobject]]::new()
        $watch = [System.Diagnostics.Stopwatch]::StartNew()
        $task = $ps.InvokeAsync($pipelineInput, $output)
    } catch {
        $ps.Dispose()
        throw
    }
    $script:Running = [pscustomobject]@{
        Id = $Id; PowerShell = $ps; Task = $task; Output = $output; Depth = $depth; Watch = $watch; StopRequested = $false
    }
}

function Stop-Running {
    $run = $script:Running
    if ($null -eq $run -or $run.StopRequested) { return }
    $run.StopRequested = $true
    # BeginStop returns at once; Stop() would block the loop (and can deadlock on a stuck prompt).
    try { $null = $run.PowerShell.BeginStop($null, $null) } catch { Write-Diag "stop failed: $((Get-InnerException $_.Exception).Message)" }
}

function ConvertTo-OutputJson($Items, [int]$Depth) {
    # Type-data script properties run in this scope while ConvertTo-Json reads them; they are written
    # for non-strict code, so keep the host's strict mode away from them.
    Set-StrictMode -Off
    $parts = [System.Collections.Generic.List[string]]::new()
    foreach ($item in $Items) {
        if ($null -eq $item) { $parts.Add('null'); continue }
        $json = $null
        try {
            $json = ConvertTo-Json -InputObject $item -Depth $Depth -Compress -EnumsAsStrings -WarningAction SilentlyContinue
        } catch {
            $text = $null
            try { $text = $item.ToString() } catch { $text = $item.PSObject.BaseObject.GetType().FullName }
            $json = ConvertTo-Json -InputObject ([string]$text) -Compress
        }
        if ($null -eq $json) { $json = 'null' }
        $parts.Add($json)
    }
    return , $parts
}

function Complete-Invoke {
    $run = $script:Running
    $script:Running = $null
    $ps = $run.PowerShell
    try {
        $run.Watch.Stop()
        $stopped = $ps.InvocationStateInfo.State -eq [System.Management.Automation.PSInvocationState]::Stopped
        # The task is built over EndInvoke; its AggregateException holds what EndInvoke threw.
        $terminating = $null
        if ($run.Task.IsFaulted -and $null -ne $run.Task.Exception) { $terminating = $run.Task.Exception.InnerException }
        $terminatingRecord = $null
        if ($null -ne $terminating -and -not ($stopped -and $terminating -is [System.Management.Automation.PipelineStoppedException])) {
            $terminatingRecord = Get-ErrorRecord $terminating
        }
        $errors = [System.Collections.Generic.List[object]]::new()
        foreach ($record in $ps.Streams.Error.ReadAll()) {
            if ($null -ne $terminatingRecord -and [object]::ReferenceEquals($record, $terminatingRecord)) { continue }
            $errors.Add((ConvertTo-ErrorInfo $record $false))
        }
        if ($null -ne $terminatingRecord) { $errors.Add((ConvertTo-ErrorInfo $terminatingRecord $true)) }

        $result = [ordered]@{
            errors      = $errors
            warnings    = @(foreach ($r in $ps.Streams.Warning.ReadAll()) { $r.Message })
            verbose     = @(foreach ($r in $ps.Streams.Verbose.ReadAll()) { $r.Message })
            debug       = @(foreach ($r in $ps.Streams.Debug.ReadAll()) { $r.Message })
            information = @(foreach ($r in $ps.Streams.Information.ReadAll()) {
                    [ordered]@{ message = [string]$r.MessageData; tags = @($r.Tags); source = $r.Source }
                })
            hadErrors   = $ps.HadErrors
            stopped     = $stopped
            durationMs  = $run.Watch.ElapsedMilliseconds
        }
        # Output items are already JSON; splice them in rather than encode them a second time.
        $items = ConvertTo-OutputJson $run.Output.ReadAll() $run.Depth
        $head = ConvertTo-Json -InputObject ([ordered]@{ id = $run.Id; ok = $true }) -Compress
        $rest = ConvertTo-Json -InputObject $result -Depth 10 -Compress
        Send-Frame ($head.Substring(0, $head.Length - 1) + ',"result":{"output":[' + ($items -join ',') + '],' + $rest.Substring(1) + '}')
    } catch {
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        Send-Failure $run.Id 'internal' $record.ToString() (ConvertTo-ErrorInfo $record $true)
    } finally {
        $ps.Dispose()
    }
}

function Invoke-Frame([string]$Line) {
    $frame = $null
    try { $frame = ConvertFrom-FrameJson $Line } catch { $frame = $null }
    if ($frame -isnot [hashtable]) {
        # Only a leading top-level id is trusted: a stop notification carries its target id in params.
        if ($Line -match '^\s*\{\s*"id"\s*:\s*(-?\d{1,18})\s*[,}]') {
            Send-Failure ([long]$Matches[1]) 'protocol' 'The frame is not a valid JSON object.' $null
        } else {
            Write-Diag 'dropped a frame that is not a JSON object'
        }
        return
    }
    $id = $frame['id']
    $op = $frame['op']
    $params = $frame['params']

    if ($op -ceq 'stop') {
        $target = if ($params -is [hashtable]) { $params['id'] } else { $null }
        if ($null -ne $script:Running -and $null -ne $target -and $target -eq $script:Running.Id) { Stop-Running }
        return
    }
    if (-not ($id -is [int] -or $id -is [long])) {
        Write-Diag 'dropped a frame without an integer id'
        return
    }
    if ($op -isnot [string]) { Send-Failure $id 'protocol' 'The frame has no op.' $null; return }
    if ($null -eq $params) { $params = @{} }
    if ($params -isnot [hashtable]) { Send-Failure $id 'protocol' 'The params of the frame are not an object.' $null; return }
    if ($null -ne $script:Running) { Send-Failure $id 'busy' 'Another request is running.' $null; return }

    try {
        switch -CaseSensitive ($op) {
            'startup' { Invoke-Startup $id $params }
            'commands' {
                $names = ConvertTo-List $params['names']
                # Get-Command -Module takes names: a configured path becomes the name startup imported from it.
                $modules = @(foreach ($entry in (ConvertTo-List $params['modules'])) {
                        $via = [string]$entry
                        $name = if ($script:ModuleNames.ContainsKey($via)) { $script:ModuleNames[$via] } else { $via }
                        @{ Name = $name; Via = $via }
                    })
                $patterns = ConvertTo-List $params['patterns']
                Send-Response $id (Invoke-WorkerScript $CommandsScript @($names, $modules, $patterns))
            }
            'describe' {
                $names = ConvertTo-List $params['names']
                $withHelp = $true
                if ($params.ContainsKey('help')) { $withHelp = [bool]$params['help'] }
                Send-Response $id (Invoke-WorkerScript $DescribeScript @($names, $withHelp))
            }
            'invoke' { Start-Invoke $id $params }
            'reset' { Invoke-Reset $id }
            'exit' { Send-Response $id ([ordered]@{}); $script:Quit = $true }
            default { Send-Failure $id 'unknown-op' "Unknown op '$op'." $null }
        }
    } catch {
        $record = Get-ErrorRecord (Get-InnerException $_.Exception)
        Send-Failure $id 'internal' $record.ToString() (ConvertTo-ErrorInfo $record $true)
    }
}

function Connect-Endpoint([string]$Spec) {
    if ($Spec.StartsWith('unix:', [System.StringComparison]::Ordinal)) {
        $socket = [System.Net.Sockets.Socket]::new([System.Net.Sockets.AddressFamily]::Unix,
            [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Unspecified)
        $socket.Connect([System.Net.Sockets.UnixDomainSocketEndPoint]::new($Spec.Substring(5)))
    } elseif ($Spec -match '^tcp:(.+):(\d{1,5})$') {
        $address = [System.Net.IPAddress]::Parse(($Matches[1] -replace '^\[|\]$', ''))
        $socket = [System.Net.Sockets.Socket]::new($address.AddressFamily,
            [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Tcp)
        $socket.NoDelay = $true
        $socket.Connect($address, [int]$Matches[2])
    } else {
        throw "Unsupported endpoint '$Spec'."
    }
    return [System.Net.Sockets.NetworkStream]::new($socket, $true)
}

# ---------------------------------------------------------------------------------------------------
# Main.
# ---------------------------------------------------------------------------------------------------

# Take the token, then drop it from the process environment: user code and the native programs it
# starts share this environment, and the token is not theirs to read.
$token = [string]$env:SVC_WORKER_TOKEN
[System.Environment]::SetEnvironmentVariable('SVC_WORKER_TOKEN', [NullString]::Value)
# Native programs started by user code are decoded with the console encoding; make it UTF-8.
try { [Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false) } catch { Write-Diag "cannot set the console encoding: $($_.Exception.Message)" }

$exitCode = 0
$hardExit = $false
try {
    $script:Worker = New-WorkerRunspace
    $stream = Connect-Endpoint $Endpoint
    $utf8 = [System.Text.UTF8Encoding]::new($false)
    # Full-arity constructors: each matches one overload with no optional parameters to fill in.
    $script:Reader = [System.IO.StreamReader]::new($stream, $utf8, $false, 65536, $false)
    $script:Writer = [System.IO.StreamWriter]::new($stream, $utf8, 65536, $false)
    $script:Writer.NewLine = "`n"
    $script:Writer.AutoFlush = $true

    Send-Frame (ConvertTo-Json -Compress -InputObject ([ordered]@{
                type      = 'hello'
                token     = $token
                protocol  = 1
                pid       = $PID
                psVersion = [string]$PSVersionTable['PSVersion']
                edition   = [string]$PSVersionTable['PSEdition']
                os        = [string]$PSVersionTable['OS']
            }))
    Remove-Variable -Name token -Scope Script

    # One pending read is kept across turns (a second ReadLineAsync while one is pending throws). The
    # loop waits on it and on the running invoke together, so a stop frame is seen while a command runs.
    $pending = $script:Reader.ReadLineAsync()
    while (-not $script:Quit) {
        $waitOn = if ($null -ne $script:Running) { @($pending, $script:Running.Task) } else { @($pending) }
        $null = [System.Threading.Tasks.Task]::WaitAny([System.Threading.Tasks.Task[]]$waitOn, 1000)
        if ($null -ne $script:Running -and $script:Running.Task.IsCompleted) { Complete-Invoke }
        if (-not $pending.IsCompleted) { continue }
        if ($pending.Status -ne [System.Threading.Tasks.TaskStatus]::RanToCompletion) {
            $why = if ($pending.IsFaulted) { $pending.Exception.GetBaseException().Message } else { [string]$pending.Status }
            Write-Diag "reading the socket failed: $why"
            break
        }
        $line = $pending.Result
        if ($null -eq $line) { break }
        $pending = $script:Reader.ReadLineAsync()
        try { Invoke-Frame $line } catch { Write-Diag "frame handling failed: $((Get-InnerException $_.Exception).Message)" }
    }
} catch {
    Write-Diag "fatal: $((Get-InnerException $_.Exception).Message)"
    $exitCode = 1
}

# The connection is gone (or exit was requested): stop what runs. Pipeline threads are foreground
# threads, so one that ignores the stop would keep the process alive after the script ends.
if ($null -ne $script:Running) {
    Stop-Running
    $finished = [System.Threading.Tasks.Task]::WaitAny([System.Threading.Tasks.Task[]]@($script:Running.Task), 5000)
    if ($finished -lt 0) { $hardExit = $true }
}
# The worker runspace is not closed: closing runs module OnRemove handlers and waits on jobs, and the
# process is about to end anyway. Disposing the writer closes the stream and the socket it owns.
if ($null -ne $script:Writer) { try { $script:Writer.Dispose() } catch { Write-Diag "closing the socket failed: $($_.Exception.Message)" } }
if ($hardExit) { [System.Environment]::Exit($exitCode) }
exit $exitCode
