# svc worker, part of lib/host.ps1 (dot-sourced by it): the discovery scripts that run inside the worker runspace
# (sent and compiled like those of runspace_state.ps1).

$CommandsScript = {
    param($Names, $Modules, $Patterns)

    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'
    $found = [System.Collections.Generic.List[object]]::new()
    $missing = [System.Collections.Generic.List[string]]::new()

    # Helpers are script blocks in variables, not functions: a function defined here would shadow a
    # user command of the same name and show up in Get-Command's own answers.
    # An alias is what it runs: exclusion must see the command, never the alias (iex, ri, or one the
    # startup script set). An alias whose command cannot be resolved offers nothing.
    $addFound = {
        param($Command, [string]$Source, [string]$Via)
        $depth = 0
        while ($Command -is [System.Management.Automation.AliasInfo] -and $depth -lt 32) {
            $Command = $Command.ResolvedCommand
            $depth++
        }
        if ($null -eq $Command -or $Command -is [System.Management.Automation.AliasInfo]) {
            $missing.Add($Via)
            return
        }
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

    # Whether PowerShell can make a value of this type from a JSON string or number: the types it
    # converts itself, a string constructor or Parse method, a TypeConverter from string, or an
    # argument transformation on the parameter. A Process or a ScriptBlock cannot be sent in JSON.
    $fromString = {
        param([type]$Type, $Attributes)
        if ($Type.IsPrimitive -or $Type.IsEnum -or $Type -eq [string] -or $Type -eq [decimal] -or $Type -eq [object] -or
            $Type -eq [psobject] -or [System.Collections.IDictionary].IsAssignableFrom($Type)) { return $true }
        if ($Type -eq [scriptblock]) { return $false }
        foreach ($attribute in $Attributes) { if ($attribute -is [System.Management.Automation.ArgumentTransformationAttribute]) { return $true } }
        if ($null -ne $Type.GetConstructor([type[]]@([string]))) { return $true }
        if ($null -ne $Type.GetMethod('Parse', [System.Reflection.BindingFlags]'Public, Static', $null, [type[]]@([string]), $null)) { return $true }
        try { return [System.ComponentModel.TypeDescriptor]::GetConverter($Type).CanConvertFrom([string]) } catch { return $false }
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
            # The comma keeps a one-name enum an array: an if statement unrolls what it outputs.
            enumValues                  = if ($valueType.IsEnum) { , [string[]][System.Enum]::GetNames($valueType) } else { $null }
            validateSet                 = $null
            validateRange               = $null
            validateLength              = $null
            validatePattern             = $null
            validateCount               = $null
            validateNotNullOrEmpty      = $false
            completions                 = $null
            isDynamic                   = $Parameter.IsDynamic
            fromString                  = & $fromString $valueType $Parameter.Attributes
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
                } elseif ($attribute -is [System.Management.Automation.ArgumentCompletionsAttribute]) {
                    # Suggestions, not a limit: -Encoding takes these names and any code page.
                    $meta['completions'] = [string[]]@(foreach ($result in $attribute.CompleteArgument('', $Parameter.Name, '', $null, @{})) { $result.CompletionText })
                }
            } catch {
                [Console]::Error.WriteLine("host.ps1: skipped an attribute of parameter '$($Parameter.Name)': $($_.Exception.Message)")
            }
        }
        $meta
    }

    # Where Get-Help looks for a cmdlet's help file (its module's folder, the user's and PowerShell's
    # help folders, each with its culture subfolders); none found, it would only invent a synopsis
    # from the syntax, in ~30 ms a cmdlet (80 for the first): a PowerShell installed without help
    # (NuGet's, a container's) spends a quarter of a second of a first start's discovery on nothing.
    $helpRoots = @(
        $PSHOME
        [System.IO.Path]::Combine([System.Environment]::GetFolderPath('LocalApplicationData'), 'powershell', 'Help')
        [System.IO.Path]::Combine([System.Environment]::GetFolderPath('MyDocuments'), 'PowerShell', 'Help')
    )
    $hasHelpFile = {
        param($Command)
        $name = [System.IO.Path]::GetFileName([string]$Command.HelpFile)
        if (-not $name) { return $false }
        $moduleBase = if ($null -ne $Command.Module) { $Command.Module.ModuleBase } else { $null }
        foreach ($root in @($moduleBase) + $helpRoots) {
            if (-not $root -or -not [System.IO.Directory]::Exists($root)) { continue }
            if ([System.IO.File]::Exists([System.IO.Path]::Combine($root, $name))) { return $true }
            foreach ($folder in [System.IO.Directory]::GetDirectories($root)) {
                if ([System.IO.File]::Exists([System.IO.Path]::Combine($folder, $name))) { return $true }
            }
        }
        return $false
    }

    $helpMeta = {
        param($Command)
        $none = [ordered]@{ synopsis = $null; description = $null; parameters = [ordered]@{}; defaults = [ordered]@{}; examples = @() }
        if ($Command.CommandType -eq 'Cmdlet' -and -not (& $hasHelpFile $Command)) { return $none }
        $help = @(Microsoft.PowerShell.Core\Get-Help -Name $Command.Name -ErrorAction Stop)[0]
        if ($null -eq $help) { return $null }
        # Without a help file Get-Help invents a synopsis from the syntax; that is not help text.
        if ($help.PSObject.TypeNames -contains 'ExtendedCmdletHelpInfo') { return $none }
        $parameters = [ordered]@{}
        $defaults = [ordered]@{}
        foreach ($p in @($help.parameters.parameter)) {
            if ($null -eq $p) { continue }
            $text = & $joinText $p.description
            if ($text) { $parameters[[string]$p.name] = $text }
            # Help files write "None" where a parameter has no default; comment-based help leaves it empty.
            $default = ([string]$p.defaultValue).Trim()
            if ($default -and $default -ne 'None') { $defaults[[string]$p.name] = $default }
        }
        $examples = [System.Collections.Generic.List[object]]::new()
        foreach ($example in @($help.examples.example)) {
            if ($null -eq $example) { continue }
            $code = ([string]$example.code).Trim()
            if (-not $code) { continue }
            $examples.Add([ordered]@{ code = $code; remarks = & $joinText $example.remarks })
        }
        $synopsis = ([string]$help.Synopsis).Trim()
        return [ordered]@{
            synopsis    = if ($synopsis) { $synopsis } else { $null }
            description = & $joinText $help.description
            parameters  = $parameters
            defaults    = $defaults
            examples    = $examples
        }
    }

    # A provider cmdlet (Get-Content, Get-ChildItem, Set-Content) asks the provider of its first path
    # for dynamic parameters (-Raw, -File, -Encoding); asked with a FileSystem path, Get-Command
    # describes the FileSystem provider's, whatever the runspace's location. It can pass the path only
    # where the first positional parameter is Path or LiteralPath in every set. Null otherwise.
    $fileSystemCommand = {
        param($Command)
        if ($Command -isnot [System.Management.Automation.CmdletInfo] -or $null -eq $Command.ImplementingType -or
            -not [Microsoft.PowerShell.Commands.CoreCommandBase].IsAssignableFrom($Command.ImplementingType)) { return $null }
        $first = @(foreach ($set in $Command.ParameterSets) { foreach ($p in $set.Parameters) { if ($p.Position -eq 0) { $p.Name } } })
        if ($first.Count -eq 0) { return $null }
        foreach ($name in $first) { if ($name -ne 'Path' -and $name -ne 'LiteralPath') { return $null } }
        $qualified = [System.Management.Automation.WildcardPattern]::Escape($Command.Name)
        if ($Command.ModuleName) { $qualified = "$($Command.ModuleName)\$qualified" }
        $path = 'FileSystem::' + [System.IO.Path]::GetTempPath()
        try {
            return @(Microsoft.PowerShell.Core\Get-Command -Name $qualified -CommandType Cmdlet -ArgumentList $path -ErrorAction Ignore)[0]
        } catch {
            return $null
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
            $provider = $null
            $withPath = & $fileSystemCommand $command
            if ($null -ne $withPath) {
                $command = $withPath
                $provider = 'FileSystem'
            }
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
                    confirmImpact         = if ($null -ne $metadata -and $metadata.SupportsShouldProcess) { [string]$metadata.ConfirmImpact } else { $null }
                    outputTypes           = @(foreach ($type in $command.OutputType) { $type.Name })
                    parameterSets         = $sets
                    help                  = $help
                    provider              = $provider
                })
        } catch {
            [Console]::Error.WriteLine("host.ps1: cannot describe '$name': $($_.Exception.Message)")
            $missing.Add($name)
        }
    }
    [ordered]@{ commands = $commands; missing = $missing }
}

$SourcesScript = {
    Set-StrictMode -Off
    $ErrorActionPreference = 'Stop'

    # The files whose code the session's commands come from, so that svc can tell when one changes:
    # each loaded module's own files (its script or binary, its manifest, the files its manifest
    # lists, its nested modules'), the file of every function in its scope (dot-sourced .ps1 files
    # included), and the file of every global function (a startup script's). PowerShell's own
    # modules, under $PSHOME, change only with PowerShell, which svc checks by its version.
    $psHomeRoot = [System.IO.Path]::GetFullPath($PSHOME).TrimEnd([System.IO.Path]::DirectorySeparatorChar) + [System.IO.Path]::DirectorySeparatorChar
    $files = [System.Collections.Generic.SortedSet[string]]::new([System.StringComparer]::Ordinal)
    $add = {
        param($Path)
        if ($Path -isnot [string] -or $Path.Length -eq 0) { return }
        try { $full = [System.IO.Path]::GetFullPath($Path) } catch { return }
        if ($full.StartsWith($psHomeRoot, [System.StringComparison]::OrdinalIgnoreCase)) { return }
        if ([System.IO.File]::Exists($full)) { $null = $files.Add($full) }
    }
    $addModule = {
        param($Module, [int]$Depth)
        if ($null -eq $Module -or $Depth -gt 8) { return }
        & $add $Module.Path
        if ($Module.ModuleBase) { & $add ([System.IO.Path]::Combine($Module.ModuleBase, "$($Module.Name).psd1")) }
        foreach ($listed in $Module.FileList) { & $add $listed }
        foreach ($nested in $Module.NestedModules) { & $addModule $nested ($Depth + 1) }
        if ($Module.ModuleType -eq 'Script') {
            foreach ($function in @(& $Module { Microsoft.PowerShell.Management\Get-ChildItem -Path function: })) { & $add $function.ScriptBlock.File }
        }
    }
    foreach ($module in @(Microsoft.PowerShell.Core\Get-Module)) { & $addModule $module 0 }
    foreach ($function in @(Microsoft.PowerShell.Management\Get-ChildItem -Path function:)) { & $add $function.ScriptBlock.File }
    [ordered]@{ files = @($files) }
}
