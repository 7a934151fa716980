import { AppError, defineMessages } from '@app/platform';

/** The credentials service's errors: stable codes, statuses and localized messages. */
export const credentialNotFound = (id: string) => new AppError('CREDENTIALS_NOT_FOUND', 404, 'credentials.notFound', { id });
export const identityMissing = (id: string) => new AppError('CREDENTIALS_IDENTITY_NOT_FOUND', 422, 'credentials.identityNotFound', { id });
export const localExists = () => new AppError('CREDENTIALS_LOCAL_EXISTS', 422, 'credentials.localExists');
export const subjectTaken = (provider: string) => new AppError('CREDENTIALS_SUBJECT_TAKEN', 422, 'credentials.subjectTaken', { provider });
/** sso's federated sign-in found no credential for the upstream account (internal route only). */
export const federatedSubjectNotFound = () => new AppError('CREDENTIALS_FEDERATED_NOT_FOUND', 404, 'credentials.federatedNotFound');
export const credentialConflict = () => new AppError('CREDENTIALS_CONFLICT', 422, 'credentials.conflict');
export const activationForbidden = () => new AppError('CREDENTIALS_ACTIVATION_FORBIDDEN', 403, 'credentials.activationForbidden');
export const identityUnavailable = () => new AppError('CREDENTIALS_IDENTITY_UNAVAILABLE', 503, 'credentials.identityUnavailable', {}, { 'retry-after': '1' });

/**
 * The provider rules, worded per locale. Each names the rule it enforces, so a 400 tells
 * the caller exactly what to change.
 */
defineMessages({
  en: {
    'credentials.notFound': 'No credential has id {id}.',
    'credentials.identityNotFound': 'No identity has id {id}; create the identity first.',
    'credentials.localExists': 'This identity already has a LOCAL credential; update it instead.',
    'credentials.subjectTaken': 'This {provider} subject is already linked to a credential.',
    'credentials.federatedNotFound': 'No credential links this upstream account.',
    'credentials.conflict': 'The credential conflicts with an existing one.',
    'credentials.identityUnavailable': 'The identity service could not be asked; retry shortly.',
    'credentials.rule.type': 'Rule "type follows provider": a {provider} credential has type {type}.',
    'credentials.rule.secretRequired': 'Rule "{provider} needs secret": a {provider} credential must have a secret.',
    'credentials.rule.secretForbidden': 'Rule "{provider} forbids secret": a {provider} credential has no secret; send subject only.',
    'credentials.rule.subjectRequired': 'Rule "{provider} needs subject": send the account id the provider gives as subject.',
    'credentials.rule.subjectForbidden': 'Rule "{provider} forbids subject": a {provider} credential has no subject.',
    'credentials.rule.passwordLength': 'Rule "LOCAL password length": a password has {min} to {max} characters.',
    'credentials.rule.apiKeyLength': 'Rule "API_KEY secret length": an API key secret has {min} to {max} characters.',
    'credentials.rule.apiKeyRandom':
      'Rule "API_KEY secret is random": an API key secret is URL-safe random data (A-Z a-z 0-9 _ -), at least 12 distinct characters, no repeated or sequential run; generate one, e.g. openssl rand -base64 48 | tr +/ -_ | tr -d =.',
    'credentials.activationForbidden': 'Only an admin may activate or deactivate a credential.',
  },
  'pt-BR': {
    'credentials.notFound': 'Nenhuma credencial tem o id {id}.',
    'credentials.identityNotFound': 'Nenhuma identidade tem o id {id}; crie a identidade primeiro.',
    'credentials.localExists': 'Esta identidade já tem uma credencial LOCAL; atualize-a.',
    'credentials.subjectTaken': 'Este subject de {provider} já está vinculado a uma credencial.',
    'credentials.federatedNotFound': 'Nenhuma credencial está vinculada a esta conta externa.',
    'credentials.conflict': 'A credencial conflita com uma existente.',
    'credentials.identityUnavailable': 'Não foi possível consultar o serviço de identidades; tente novamente em instantes.',
    'credentials.rule.type': 'Regra "o tipo segue o provedor": uma credencial {provider} tem o tipo {type}.',
    'credentials.rule.secretRequired': 'Regra "{provider} exige secret": uma credencial {provider} precisa de um secret.',
    'credentials.rule.secretForbidden': 'Regra "{provider} proíbe secret": uma credencial {provider} não tem secret; envie apenas subject.',
    'credentials.rule.subjectRequired': 'Regra "{provider} exige subject": envie como subject o id de conta dado pelo provedor.',
    'credentials.rule.subjectForbidden': 'Regra "{provider} proíbe subject": uma credencial {provider} não tem subject.',
    'credentials.rule.passwordLength': 'Regra "tamanho da senha LOCAL": uma senha tem de {min} a {max} caracteres.',
    'credentials.rule.apiKeyLength': 'Regra "tamanho do secret de API_KEY": um secret de chave de API tem de {min} a {max} caracteres.',
    'credentials.rule.apiKeyRandom':
      'Regra "secret de API_KEY aleatório": um secret de chave de API é feito de dados aleatórios seguros para URL (A-Z a-z 0-9 _ -), com ao menos 12 caracteres distintos, sem trechos repetidos ou sequenciais; gere um, por exemplo openssl rand -base64 48 | tr +/ -_ | tr -d =.',
    'credentials.activationForbidden': 'Somente um administrador pode ativar ou desativar uma credencial.',
  },
  es: {
    'credentials.notFound': 'Ninguna credencial tiene el id {id}.',
    'credentials.identityNotFound': 'Ninguna identidad tiene el id {id}; cree la identidad primero.',
    'credentials.localExists': 'Esta identidad ya tiene una credencial LOCAL; actualícela.',
    'credentials.subjectTaken': 'Este subject de {provider} ya está vinculado a una credencial.',
    'credentials.federatedNotFound': 'Ninguna credencial está vinculada a esta cuenta externa.',
    'credentials.conflict': 'La credencial entra en conflicto con una existente.',
    'credentials.identityUnavailable': 'No se pudo consultar el servicio de identidades; reintente en breve.',
    'credentials.rule.type': 'Regla "el tipo sigue al proveedor": una credencial {provider} tiene el tipo {type}.',
    'credentials.rule.secretRequired': 'Regla "{provider} requiere secret": una credencial {provider} debe tener un secret.',
    'credentials.rule.secretForbidden': 'Regla "{provider} prohíbe secret": una credencial {provider} no tiene secret; envíe solo subject.',
    'credentials.rule.subjectRequired': 'Regla "{provider} requiere subject": envíe como subject el id de cuenta que da el proveedor.',
    'credentials.rule.subjectForbidden': 'Regla "{provider} prohíbe subject": una credencial {provider} no tiene subject.',
    'credentials.rule.passwordLength': 'Regla "longitud de contraseña LOCAL": una contraseña tiene de {min} a {max} caracteres.',
    'credentials.rule.apiKeyLength': 'Regla "longitud del secret de API_KEY": un secret de clave de API tiene de {min} a {max} caracteres.',
    'credentials.rule.apiKeyRandom':
      'Regla "secret de API_KEY aleatorio": un secret de clave de API son datos aleatorios seguros para URL (A-Z a-z 0-9 _ -), con al menos 12 caracteres distintos, sin tramos repetidos ni secuenciales; genere uno, p. ej. openssl rand -base64 48 | tr +/ -_ | tr -d =.',
    'credentials.activationForbidden': 'Solo un administrador puede activar o desactivar una credencial.',
  },
  fr: {
    'credentials.notFound': "Aucun identifiant de connexion n'a l'id {id}.",
    'credentials.identityNotFound': "Aucune identité n'a l'id {id} ; créez d'abord l'identité.",
    'credentials.localExists': 'Cette identité a déjà un identifiant LOCAL ; modifiez-le plutôt.',
    'credentials.subjectTaken': 'Ce subject {provider} est déjà lié à un identifiant.',
    'credentials.federatedNotFound': 'Aucun identifiant n’est lié à ce compte externe.',
    'credentials.conflict': "L'identifiant entre en conflit avec un identifiant existant.",
    'credentials.identityUnavailable': "Le service des identités n'a pas pu être interrogé ; réessayez bientôt.",
    'credentials.rule.type': 'Règle « le type suit le fournisseur » : un identifiant {provider} a le type {type}.',
    'credentials.rule.secretRequired': 'Règle « {provider} exige secret » : un identifiant {provider} doit avoir un secret.',
    'credentials.rule.secretForbidden': "Règle « {provider} interdit secret » : un identifiant {provider} n'a pas de secret ; envoyez seulement subject.",
    'credentials.rule.subjectRequired': "Règle « {provider} exige subject » : envoyez comme subject l'id de compte donné par le fournisseur.",
    'credentials.rule.subjectForbidden': "Règle « {provider} interdit subject » : un identifiant {provider} n'a pas de subject.",
    'credentials.rule.passwordLength': 'Règle « longueur du mot de passe LOCAL » : un mot de passe a de {min} à {max} caractères.',
    'credentials.rule.apiKeyLength': 'Règle « longueur du secret API_KEY » : un secret de clé d\'API compte de {min} à {max} caractères.',
    'credentials.rule.apiKeyRandom':
      'Règle « secret API_KEY aléatoire » : un secret de clé d\'API est fait de données aléatoires sûres pour les URL (A-Z a-z 0-9 _ -), avec au moins 12 caractères distincts, sans suite répétée ni séquentielle ; générez-en un, p. ex. openssl rand -base64 48 | tr +/ -_ | tr -d =.',
    'credentials.activationForbidden': 'Seul un administrateur peut activer ou désactiver un identifiant.',
  },
  de: {
    'credentials.notFound': 'Kein Zugangsnachweis hat die ID {id}.',
    'credentials.identityNotFound': 'Keine Identität hat die ID {id}; legen Sie zuerst die Identität an.',
    'credentials.localExists': 'Diese Identität hat bereits einen LOCAL-Zugangsnachweis; ändern Sie diesen.',
    'credentials.subjectTaken': 'Dieses {provider}-Subject ist bereits mit einem Zugangsnachweis verknüpft.',
    'credentials.federatedNotFound': 'Kein Zugangsnachweis ist mit diesem externen Konto verknüpft.',
    'credentials.conflict': 'Der Zugangsnachweis steht im Konflikt mit einem bestehenden.',
    'credentials.identityUnavailable': 'Der Identitätsdienst war nicht erreichbar; versuchen Sie es gleich erneut.',
    'credentials.rule.type': 'Regel „Typ folgt Anbieter“: ein {provider}-Zugangsnachweis hat den Typ {type}.',
    'credentials.rule.secretRequired': 'Regel „{provider} braucht secret“: ein {provider}-Zugangsnachweis muss ein secret haben.',
    'credentials.rule.secretForbidden': 'Regel „{provider} verbietet secret“: ein {provider}-Zugangsnachweis hat kein secret; senden Sie nur subject.',
    'credentials.rule.subjectRequired': 'Regel „{provider} braucht subject“: senden Sie die Konto-ID des Anbieters als subject.',
    'credentials.rule.subjectForbidden': 'Regel „{provider} verbietet subject“: ein {provider}-Zugangsnachweis hat kein subject.',
    'credentials.rule.passwordLength': 'Regel „Länge des LOCAL-Passworts“: ein Passwort hat {min} bis {max} Zeichen.',
    'credentials.rule.apiKeyLength': 'Regel „Länge des API_KEY-secret“: ein API-Schlüssel-secret hat {min} bis {max} Zeichen.',
    'credentials.rule.apiKeyRandom':
      'Regel „API_KEY-secret ist zufällig“: ein API-Schlüssel-secret besteht aus URL-sicheren Zufallsdaten (A-Z a-z 0-9 _ -), mit mindestens 12 verschiedenen Zeichen, ohne wiederholte oder fortlaufende Folgen; erzeugen Sie eines, z. B. openssl rand -base64 48 | tr +/ -_ | tr -d =.',
    'credentials.activationForbidden': 'Nur ein Admin darf einen Zugangsnachweis aktivieren oder deaktivieren.',
  },
});
