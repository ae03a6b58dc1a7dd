# svc worker, part of lib/host.ps1 (dot-sourced by it): shapes output objects for a model before
# they are encoded. An object is reduced to the properties PowerShell itself would show: the
# requested ones, else its DefaultDisplayPropertySet, else the columns of its first table or list
# view in the format data; without either it stays whole. What was left out is reported.

$script:AnsiEscape = [regex]::new('\x1b\[[0-9;?]*[ -/]*[@-~]', [System.Text.RegularExpressions.RegexOptions]::Compiled)

# The properties a format view shows: property columns by name, script-block columns by the
# properties they read from $_ (Process's "NPM(K)" column is [long]($_.NPM / 1024): NPM).
function Get-ViewPropertyName($View) {
    $entries = if ($View.Control -is [System.Management.Automation.TableControl]) {
        if ($View.Control.Rows.Count -gt 0) { foreach ($column in $View.Control.Rows[0].Columns) { $column.DisplayEntry } }
    } else {
        if ($View.Control.Entries.Count -gt 0) { foreach ($item in $View.Control.Entries[0].Items) { $item.DisplayEntry } }
    }
    $names = [System.Collections.Generic.List[string]]::new()
    foreach ($entry in $entries) {
        if ($null -eq $entry) { continue }
        if ($entry.ValueType -eq [System.Management.Automation.DisplayEntryValueType]::Property) {
            if (-not $names.Contains($entry.Value)) { $names.Add($entry.Value) }
            continue
        }
        $tokens = $null
        $parseErrors = $null
        $ast = [System.Management.Automation.Language.Parser]::ParseInput($entry.Value, [ref]$tokens, [ref]$parseErrors)
        $reads = $ast.FindAll({
                param($node)
                $node -is [System.Management.Automation.Language.MemberExpressionAst] -and
                $node.Member -is [System.Management.Automation.Language.StringConstantExpressionAst] -and
                $node.Expression -is [System.Management.Automation.Language.VariableExpressionAst] -and
                @('_', 'PSItem') -contains $node.Expression.VariablePath.UserPath
            }, $true)
        foreach ($read in $reads) {
            if (-not $names.Contains($read.Member.Value)) { $names.Add($read.Member.Value) }
        }
    }
    return , $names.ToArray()
}

# The columns of the first table or list view, in type-chain order, that names any.
function Select-FirstViewPropertyName([string[]]$TypeNames, $Definitions) {
    foreach ($typeName in $TypeNames) {
        foreach ($definition in $Definitions) {
            if ($definition.TypeNames -notcontains $typeName) { continue }
            foreach ($view in $definition.FormatViewDefinition) {
                if ($view.Control -isnot [System.Management.Automation.TableControl] -and $view.Control -isnot [System.Management.Automation.ListControl]) { continue }
                $names = Get-ViewPropertyName $view
                if ($names.Count -gt 0) { return , $names }
            }
        }
    }
    return , [string[]]@()
}

# The columns of the first table or list view of the first type in the chain that has one, read
# in the worker runspace, where the format data of imported modules lives. Cached per type chain.
function Get-FormatViewPropertyName([string[]]$TypeNames) {
    $key = $TypeNames -join '|'
    if ($script:FormatViewNames.ContainsKey($key)) { return , $script:FormatViewNames[$key] }
    $names = [string[]]@()
    $lookup = @(foreach ($name in $TypeNames) { if ($name -ne 'System.Object') { [System.Management.Automation.WildcardPattern]::Escape($name) } })
    if ($lookup.Count -gt 0) {
        $ps = [powershell]::Create($script:Worker)
        try {
            $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Get-FormatData').AddParameter('TypeName', [string[]]$lookup)
            $names = Select-FirstViewPropertyName $TypeNames $ps.Invoke()
        } catch {
            Write-Diag "reading the format data of $($TypeNames[0]) failed: $((Get-InnerException $_.Exception).Message)"
        } finally {
            $ps.Dispose()
        }
    }
    $script:FormatViewNames[$key] = $names
    return , $names
}

<#
Projects output items. $Select: @{ properties = names or wildcards (or $null); display = use the
display sets }. Returns the items to encode and a report: per type, the properties shown and the
ones left out, and the requested names that matched nothing.
#>
function Select-OutputProperty($Items, [hashtable]$Select) {
    # Objects without a display set answer $null for PSStandardMembers; type-data members are
    # written for non-strict code (as in ConvertTo-OutputJson).
    Set-StrictMode -Off
    $requested = ConvertTo-List $Select['properties']
    $display = [bool]$Select['display']
    $out = [System.Collections.Generic.List[object]]::new()
    $types = [ordered]@{}
    $matched = @{}
    # The checks are written out in the loop, not in helper functions: a script function call costs
    # tens of microseconds, which 10,000 output objects turn into a third of a second.
    foreach ($item in $Items) {
        if ($null -eq $item) { $out.Add($item); continue }
        # Values without properties worth choosing from are encoded whole.
        $base = if ($item -is [psobject]) { $item.PSObject.BaseObject } else { $item }
        if ($base -is [string] -or $base -is [ValueType] -or $base -is [System.Collections.IEnumerable]) { $out.Add($item); continue }
        $properties = $null
        $names = $null
        if ($requested.Count -gt 0) {
            $properties = $item.PSObject.Properties
            $names = [System.Collections.Generic.List[string]]::new()
            foreach ($pattern in $requested) {
                $wildcard = [System.Management.Automation.WildcardPattern]::Get([string]$pattern, [System.Management.Automation.WildcardOptions]::IgnoreCase)
                foreach ($property in $properties) {
                    if (-not $wildcard.IsMatch($property.Name)) { continue }
                    $matched[[string]$pattern] = $true
                    if (-not $names.Contains($property.Name)) { $names.Add($property.Name) }
                }
            }
        } elseif ($display) {
            # What PowerShell would show: the DefaultDisplayPropertySet, else the columns of the
            # type's first table or list view (cached per type chain), else everything.
            $set = $item.PSStandardMembers.DefaultDisplayPropertySet
            if ($null -ne $set -and $set.ReferencedPropertyNames.Count -gt 0) {
                $names = [string[]]@($set.ReferencedPropertyNames)
            } else {
                $chain = $item.PSObject.TypeNames
                $names = $script:FormatViewNames[$chain -join '|']
                if ($null -eq $names) { $names = Get-FormatViewPropertyName ([string[]]@($chain)) }
                if ($names.Count -eq 0) { $names = $null }
            }
        }
        if ($null -eq $names) { $out.Add($item); continue }
        if ($null -eq $properties) { $properties = $item.PSObject.Properties }
        $shown = [ordered]@{}
        foreach ($name in $names) {
            $property = $properties[$name]
            if ($null -eq $property) { continue }
            $value = $null
            # A getter that throws (Process.StartTime of another user's process) shows as null.
            try { $value = $property.Value } catch { $value = $null }
            # Display properties such as FileSystemInfo.NameString carry colour even when
            # $PSStyle.OutputRendering is PlainText; a model reads the escape codes as noise.
            if ($value -is [string] -and $value.IndexOf([char]27) -ge 0) { $value = $script:AnsiEscape.Replace($value, '') }
            $shown[$property.Name] = $value
        }
        $out.Add($shown)
        $typeName = if ($item.PSObject.TypeNames.Count -gt 0) { $item.PSObject.TypeNames[0] } else { $item.PSObject.BaseObject.GetType().FullName }
        if (-not $types.Contains($typeName)) {
            $omitted = [System.Collections.Generic.List[string]]::new()
            foreach ($property in $properties) { if (-not $shown.Contains($property.Name)) { $omitted.Add($property.Name) } }
            $types[$typeName] = [ordered]@{ type = $typeName; shown = @($shown.Keys); omitted = $omitted.ToArray() }
        }
    }
    $unmatched = @(foreach ($pattern in $requested) { if (-not $matched.ContainsKey([string]$pattern)) { [string]$pattern } })
    $report = [ordered]@{ types = @($types.Values); unknownProperties = $unmatched }
    return [pscustomobject]@{ Items = $out; Report = $report }
}
